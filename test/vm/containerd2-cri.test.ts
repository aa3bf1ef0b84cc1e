import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';

/**
 * What a CRI client sees of containerd 2.x that differs from 1.6/1.7 (plugins/cri-containerd
 * README): the sandbox image, the runtime's own config, image pulls through a hosts.toml mirror,
 * the sandbox's pid in its verbose status.
 */
describe('node VM: containerd 2.1 through the cri-containerd plugin', function () {
  this.timeout(600_000);
  let t: TestNodeVm;

  before(async function () {
    this.timeout(1_200_000);
    t = await systemdNodeVmOrSkip(this, false);
  });

  it("the sandbox image containerd's config pins is pinned over CRI (image GC keeps it); Status no longer names it", async function () {
    await t.cri.pullImage(t.env.images.pause);
    await t.cri.pullImage(t.env.images.busybox);
    const st = await t.cri.imageStatus(t.env.images.pause);
    assert.equal(st?.pinned, true, `the sandbox image is pinned: ${JSON.stringify(st)}`);
    const busybox = await t.cri.imageStatus(t.env.images.busybox);
    assert.notEqual(busybox?.pinned, true, 'an image the config does not pin is not');
    // containerd 2.x's verbose Status has the runtime half's config only (1.x: sandboxImage in it).
    const named = await t.cri.sandboxImage();
    assert.ok(named === undefined || named === t.env.images.pause, `sandboxImage() ${named}`);
    process.stderr.write(`      verbose Status names the sandbox image: ${named ?? 'no (containerd 2.x)'}\n`);
  });

  it('pulls from the host registry through the hosts.toml of config_path; image status and list agree', async function () {
    const ref = await t.cri.pullImage(t.env.images.busybox);
    assert.match(ref, /^sha256:[0-9a-f]{64}$/);
    const st = await t.cri.imageStatus(t.env.images.busybox);
    assert.ok(st?.repoTags.includes(t.env.images.busybox), JSON.stringify(st));
    assert.ok((await t.cri.listImages()).some((i) => i.id === st!.id));
  });

  it("a sandbox's verbose status gives its pid (the pod network stats read through it): the sandbox's init process", async function () {
    const uid = randomUUID();
    const name = `vm-pid-${process.pid}`;
    const id = await t.cri.runPodSandbox({
      metadata: { name, uid, namespace: 'kts-vm-cri', attempt: 0 },
      hostname: '',
      logDirectory: `/var/tmp/kts-vm-cri/${uid}`,
      portMappings: [],
      labels: { 'io.kubernetes.pod.name': name },
      annotations: {},
      // The node's network: no CNI in the way. containerd 2.1 with SystemdCgroup wants a slice.
      linux: { cgroupParent: 'system.slice', securityContext: { namespaceOptions: { network: 'NODE', pid: 'POD', ipc: 'POD' } } },
    });
    try {
      const st = await t.cri.podSandboxStatus(id);
      assert.ok(Number.isInteger(st.pid) && st.pid! > 0, `pid in the verbose PodSandboxStatus: ${JSON.stringify(st)}`);
      // The sandbox's process is PID 1 of the pod's PID namespace (the project's pause image is a shell script, so not named by comm).
      const nspid = /^NSpid:\s+(.+)$/m.exec((await t.ssh(`cat /proc/${st.pid}/status`)).stdout)?.[1]?.split(/\s+/);
      assert.deepEqual(nspid, [String(st.pid), '1'], `NSpid of ${st.pid}`);
      assert.match((await t.ssh(`cat /proc/${st.pid}/cgroup`)).stdout, /system\.slice/);
    } finally {
      await t.cri.stopPodSandbox(id).catch(() => {});
      await t.cri.removePodSandbox(id).catch(() => {});
      await t.ssh(`rm -rf /var/tmp/kts-vm-cri/${uid}`).catch(() => {});
    }
  });

  it('runtime handlers: runc with user namespace support', async function () {
    const handlers = await t.cri.runtimeHandlers();
    const runc = handlers.find((h) => h.name === 'runc') ?? handlers.find((h) => h.name === '');
    assert.ok(runc, JSON.stringify(handlers));
    assert.equal(runc.userNamespaces, true);
  });
});
