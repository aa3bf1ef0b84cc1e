import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../core/runtime/labels.ts';
import { mountsUnder, readMounts } from '../../core/volumes/mount-utils.ts';
import { CONTEXT_KEYS, ephemeralVolumeHandle } from '../../plugins/csi-grpc/csi-volumes.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { FakeCsiDriver } from '../fakes/csi-hostpath-driver.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

/**
 * Volumes on real containerd: emptyDir (disk and tmpfs), hostPath type checks, configMap and
 * secret from the local objects dir with atomic updates, subPath, and CSI inline volumes
 * through a gRPC test driver that registers like node-driver-registrar. Every test removes
 * its pod and checks that no mount under the kubelet's root dir is left.
 */
describe('volumes on containerd', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let t: TestKubelet;
  let dir: string;
  let objects: string;
  let outside: string;
  let plain: FakeCsiDriver;
  let staged: FakeCsiDriver;
  const ns = 'volumes-test';
  const drivers: FakeCsiDriver[] = [];

  const kubeletOptions = () => ({
    plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ['csi-grpc', { rescanSeconds: 0.3, callTimeoutSeconds: 10 }]] as any,
    config: { localObjectsDir: objects, syncFrequencyMs: 1000 },
    dir,
  });

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-volumes-'));
    objects = path.join(dir, 'objects');
    outside = path.join(dir, 'outside');
    await fs.mkdir(outside, { recursive: true });
    const registry = path.join(dir, 'root', 'plugins_registry');
    plain = new FakeCsiDriver({ name: 'plain.csi.test', dir: path.join(dir, 'drv-plain'), registryDir: registry });
    staged = new FakeCsiDriver({ name: 'staged.csi.test', dir: path.join(dir, 'drv-staged'), registryDir: registry, stage: true });
    drivers.push(plain, staged);
    await plain.start();
    await staged.start();
    t = await startTestKubelet(kubeletOptions());
  });

  after(async function () {
    if (t) {
      await t.removeEveryPod(30_000);
      await t.stop();
    }
    for (const d of drivers) await d.stop().catch(() => {});
    const left = await mountsUnder(dir);
    for (const mp of left) await import('../../core/volumes/mount-utils.ts').then((m) => m.unmount(mp)).catch(() => {});
    await fs.rm(dir, { recursive: true, force: true });
    assert.deepEqual(left, [], 'no mount left under the test dir');
  });

  // A test that failed half-way leaves its pod: remove it, so the next tests' "nothing left"
  // checks judge their own pods, not this one's (one failure, one report).
  afterEach(async function () {
    if (!t || this.currentTest?.state !== 'failed') return;
    await t.removeEveryPod(30_000);
  });

  const sh = (name: string, script: string, extra: object = {}) => ({ name, image: env.images.busybox, command: ['sh', '-c', script], ...extra });
  const pod = (name: string, containers: object[], volumes: object[], spec: object = {}) =>
    podManifest(name, containers, { volumes, hostNetwork: true, terminationGracePeriodSeconds: 0, ...spec }, { namespace: ns });
  const uidOf = (name: string) => t.pod(name)!.metadata!.uid!;
  const podDir = (uid: string) => path.join(t.config.rootDir, 'pods', uid);

  /** Runs a command in the pod's container; returns stdout (trimmed), or throws with stderr on a non-zero exit. */
  async function exec(name: string, container: string, cmd: string[]): Promise<{ out: string; code: number; err: string }> {
    const p = t.pod(name)!;
    const cs = [...(p.status!.containerStatuses ?? [])].find((c) => c.name === container)!;
    const id = cs.containerID!.replace(/^.*:\/\//, '');
    const r = await t.kubelet.runtime.execSync(id, cmd, 10);
    return { out: Buffer.from(r.stdout).toString().trim(), err: Buffer.from(r.stderr).toString().trim(), code: r.exitCode };
  }

  async function remove(file: string, name: string): Promise<string> {
    const uid = uidOf(name);
    await t.removeManifest(file);
    await t.waitForPod(name, (p) => p === undefined, 30_000, 'removed');
    assert.deepEqual(await mountsUnder(podDir(uid)), [], 'no mount left in the pod dir');
    await assert.rejects(fs.stat(podDir(uid)), 'the pod dir is removed');
    return uid;
  }

  const waitingMessage = (p: V1Pod | undefined) => p?.status?.containerStatuses?.[0]?.state?.waiting?.message ?? '';

  async function writeObject(kind: 'configmaps' | 'secrets', name: string, obj: object): Promise<void> {
    const d = path.join(objects, kind, ns);
    await fs.mkdir(d, { recursive: true });
    await fs.writeFile(path.join(d, `${name}.yaml.tmp`), JSON.stringify(obj));
    await fs.rename(path.join(d, `${name}.yaml.tmp`), path.join(d, `${name}.yaml`));
  }

  it('shares an emptyDir between two containers, in the upstream layout', async function () {
    await t.writeManifest('share.json', pod('share', [
      sh('writer', 'echo from-writer > /data/hello; exec sleep 3600', { volumeMounts: [{ name: 'shared', mountPath: '/data' }] }),
      sh('reader', 'exec sleep 3600', { volumeMounts: [{ name: 'shared', mountPath: '/in', readOnly: true }] }),
    ], [{ name: 'shared', emptyDir: {} }]));
    await t.waitForPod('share', isRunning, 40_000, 'Running');
    const host = path.join(podDir(uidOf('share')), 'volumes', 'kubernetes.io~empty-dir', 'shared');
    for (let i = 0; i < 50 && !(await fs.stat(path.join(host, 'hello')).catch(() => undefined)); i++) await sleep(100);
    assert.equal((await exec('share', 'reader', ['cat', '/in/hello'])).out, 'from-writer');
    assert.equal(await fs.readFile(path.join(host, 'hello'), 'utf8'), 'from-writer\n');
    const ro = await exec('share', 'reader', ['sh', '-c', 'echo x > /in/other']);
    assert.notEqual(ro.code, 0, 'readOnly mount refuses writes');
    await remove('share.json', 'share');
  });

  it('makes a Memory emptyDir a tmpfs that refuses writes past its sizeLimit', async function () {
    await t.writeManifest('mem.json', pod('mem', [sh('main', 'exec sleep 3600', { volumeMounts: [{ name: 'cache', mountPath: '/cache' }] })], [{ name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }]));
    await t.waitForPod('mem', isRunning, 40_000, 'Running');
    const host = path.join(podDir(uidOf('mem')), 'volumes', 'kubernetes.io~empty-dir', 'cache');
    const m = (await readMounts()).filter((x) => x.mountPoint === host);
    assert.equal(m.length, 1);
    assert.equal(m[0]!.fsType, 'tmpfs');
    assert.equal((await exec('mem', 'main', ['sh', '-c', 'dd if=/dev/zero of=/cache/small bs=1024 count=512 2>&1'])).code, 0);
    const big = await exec('mem', 'main', ['sh', '-c', 'dd if=/dev/zero of=/cache/big bs=1024 count=2048 2>&1']);
    assert.notEqual(big.code, 0, 'writing past 1Mi fails');
    assert.match(big.out + big.err, /No space left on device/);
    await remove('mem.json', 'mem');
  });

  it('accepts hostPaths of every type that matches, creating *OrCreate ones', async function () {
    const base = path.join(dir, 'hp');
    await fs.mkdir(path.join(base, 'existing-dir'), { recursive: true });
    await fs.writeFile(path.join(base, 'existing-file'), 'host-file');
    const sock = path.join(base, 'app.sock');
    const server = net.createServer().listen(sock);
    try {
      const vols = [
        { name: 'dir', hostPath: { path: path.join(base, 'existing-dir'), type: 'Directory' } },
        { name: 'mkdir', hostPath: { path: path.join(base, 'new', 'dir'), type: 'DirectoryOrCreate' } },
        { name: 'file', hostPath: { path: path.join(base, 'existing-file'), type: 'File' } },
        { name: 'touch', hostPath: { path: path.join(base, 'new-file'), type: 'FileOrCreate' } },
        { name: 'sock', hostPath: { path: sock, type: 'Socket' } },
        { name: 'chr', hostPath: { path: '/dev/null', type: 'CharDevice' } },
        { name: 'any', hostPath: { path: path.join(base, 'existing-dir') } },
      ];
      await t.writeManifest('hp.json', pod('hp', [sh('main', 'exec sleep 3600', { volumeMounts: vols.map((v) => ({ name: v.name, mountPath: `/hp/${v.name}` })) })], vols));
      await t.waitForPod('hp', isRunning, 40_000, 'Running');
      assert.equal((await exec('hp', 'main', ['cat', '/hp/file'])).out, 'host-file');
      assert.equal((await exec('hp', 'main', ['sh', '-c', 'test -S /hp/sock && test -c /hp/chr && test -d /hp/mkdir && test -f /hp/touch'])).code, 0);
      assert.equal((await fs.stat(path.join(base, 'new', 'dir'))).isDirectory(), true);
      assert.equal((await fs.stat(path.join(base, 'new-file'))).mode & 0o777, 0o644);
      await remove('hp.json', 'hp');
      assert.equal(await fs.readFile(path.join(base, 'existing-file'), 'utf8'), 'host-file', 'host files stay after the pod');
    } finally {
      server.close();
    }
  });

  it('refuses a hostPath of the wrong type with a clear reason, creating nothing', async function () {
    const file = path.join(dir, 'hp-file');
    await fs.writeFile(file, 'x');
    await t.writeManifest('hpbad.json', pod('hpbad', [sh('main', 'exec sleep 3600', { volumeMounts: [{ name: 'd', mountPath: '/d' }, { name: 'b', mountPath: '/b' }] })], [
      { name: 'd', hostPath: { path: file, type: 'Directory' } },
      { name: 'b', hostPath: { path: '/dev/null', type: 'BlockDevice' } },
    ]));
    const p = await t.waitForPod('hpbad', (x) => /hostPath type check failed/.test(waitingMessage(x)), 20_000, 'waiting on the hostPath');
    const w = p!.status!.containerStatuses![0]!.state!.waiting!;
    assert.equal(w.reason, 'ContainerCreating');
    assert.match(w.message!, new RegExp(`MountVolume.SetUp failed for volume "d": .*hostPath type check failed: ${file} is not a directory`));
    assert.match(w.message!, /MountVolume.SetUp failed for volume "b": .*\/dev\/null is not a block device/);
    const uid = uidOf('hpbad');
    assert.equal((await t.kubelet.runtime.listPodSandboxes({ labelSelector: { [LABEL.podUID]: uid } })).length, 0, 'no sandbox before the volumes are ready');
    assert.equal(await fs.readFile(file, 'utf8'), 'x');
    await remove('hpbad.json', 'hpbad');
  });

  it('projects configMap and secret files with their modes; secrets on tmpfs; an update reaches the running container atomically', async function () {
    await writeObject('configmaps', 'app-config', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config' }, data: { 'app.conf': 'v1', other: 'o' } });
    await writeObject('secrets', 'app-secret', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'app-secret' }, data: { password: Buffer.from('s3cret').toString('base64') } });
    await t.writeManifest('proj.json', pod('proj', [sh('main', 'exec sleep 3600', { volumeMounts: [{ name: 'cfg', mountPath: '/etc/cfg' }, { name: 'sec', mountPath: '/etc/sec' }, { name: 'info', mountPath: '/etc/info' }] })], [
      { name: 'cfg', configMap: { name: 'app-config', items: [{ key: 'app.conf', path: 'conf/app.conf', mode: 0o600 }] } },
      { name: 'sec', secret: { secretName: 'app-secret', defaultMode: 0o400 } },
      { name: 'info', projected: { sources: [{ downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } }, { configMap: { name: 'app-config', items: [{ key: 'other', path: 'other' }] } }] } },
    ], { }));
    await t.waitForPod('proj', isRunning, 40_000, 'Running');
    assert.equal((await exec('proj', 'main', ['cat', '/etc/cfg/conf/app.conf'])).out, 'v1');
    assert.equal((await exec('proj', 'main', ['stat', '-L', '-c', '%a', '/etc/cfg/conf/app.conf'])).out, '600');
    assert.equal((await exec('proj', 'main', ['cat', '/etc/sec/password'])).out, 's3cret');
    assert.equal((await exec('proj', 'main', ['stat', '-L', '-c', '%a', '/etc/sec/password'])).out, '400');
    assert.equal((await exec('proj', 'main', ['cat', '/etc/info/name'])).out, 'proj-test-node');
    assert.equal((await exec('proj', 'main', ['cat', '/etc/info/other'])).out, 'o');
    assert.equal((await exec('proj', 'main', ['test', '-e', '/etc/cfg/other'])).code, 1, 'only the listed items');
    const volumes = path.join(podDir(uidOf('proj')), 'volumes');
    const mounts = await readMounts();
    assert.equal(mounts.find((m) => m.mountPoint === path.join(volumes, 'kubernetes.io~secret', 'sec'))?.fsType, 'tmpfs', 'secret on tmpfs');
    assert.equal(mounts.find((m) => m.mountPoint === path.join(volumes, 'kubernetes.io~configmap', 'cfg')), undefined, 'configMap on disk');
    const cfgDir = path.join(volumes, 'kubernetes.io~configmap', 'cfg');
    const before = await fs.readlink(path.join(cfgDir, '..data'));
    assert.match(before, /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\./);

    await writeObject('configmaps', 'app-config', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config' }, data: { 'app.conf': 'v2', other: 'o' } });
    let seen = '';
    for (let i = 0; i < 100 && seen !== 'v2'; i++) {
      seen = (await exec('proj', 'main', ['cat', '/etc/cfg/conf/app.conf'])).out;
      assert.ok(seen === 'v1' || seen === 'v2', `a reader sees the old or the new file, never a mix: ${seen}`);
      if (seen !== 'v2') await sleep(100);
    }
    assert.equal(seen, 'v2', 'the update reached the running container');
    const after = await fs.readlink(path.join(cfgDir, '..data'));
    assert.notEqual(after, before);
    // The writer removes the old version after it swaps `..data` (upstream's order too): a reader
    // that saw v2 may look before that step ends, so give it a bounded moment.
    const versions = async () => (await fs.readdir(cfgDir)).filter((n) => n.startsWith('..2'));
    for (let i = 0; i < 50 && (await versions()).length > 1; i++) await sleep(100);
    assert.deepEqual(await versions(), [after], 'the old version is gone');
    await remove('proj.json', 'proj');
  });

  it('mounts subPath and subPathExpr inside the volume', async function () {
    await t.writeManifest('sub.json', pod('sub', [sh('main', 'echo hi > /whole/a/b/f; exec sleep 3600', {
      env: [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
      volumeMounts: [{ name: 'v', mountPath: '/whole' }, { name: 'v', mountPath: '/sub', subPath: 'a/b' }, { name: 'v', mountPath: '/expr', subPathExpr: 'per-pod/$(POD)' }],
    })], [{ name: 'v', emptyDir: {} }]));
    await t.waitForPod('sub', isRunning, 40_000, 'Running');
    for (let i = 0; i < 50 && (await exec('sub', 'main', ['cat', '/sub/f'])).out !== 'hi'; i++) await sleep(100);
    assert.equal((await exec('sub', 'main', ['cat', '/sub/f'])).out, 'hi');
    await exec('sub', 'main', ['sh', '-c', 'echo e > /expr/x']);
    assert.equal((await exec('sub', 'main', ['cat', '/whole/per-pod/sub-test-node/x'])).out, 'e');
    await remove('sub.json', 'sub');
  });

  it('refuses a subPath that escapes the volume (.. or a symlink) and touches nothing outside', async function () {
    const vol = path.join(dir, 'hp-escape');
    await fs.mkdir(vol, { recursive: true });
    await fs.symlink(outside, path.join(vol, 'link'));
    await t.writeManifest('esc.json', pod('esc', [
      // A literal '..' is refused with the manifest (API validation); one an expansion makes
      // is the kubelet's to refuse when it builds the container.
      sh('dots', 'exec sleep 3600', { env: [{ name: 'UP', value: '..' }], volumeMounts: [{ name: 'v', mountPath: '/x', subPathExpr: '$(UP)/escape' }] }),
      sh('link', 'exec sleep 3600', { volumeMounts: [{ name: 'h', mountPath: '/y', subPath: 'link/created' }] }),
    ], [{ name: 'v', emptyDir: {} }, { name: 'h', hostPath: { path: vol, type: 'Directory' } }]));
    const p = await t.waitForPod('esc', (x) => (x?.status?.containerStatuses ?? []).length === 2 && x!.status!.containerStatuses!.every((c) => c.state?.waiting?.reason === 'CreateContainerConfigError'), 30_000, 'CreateContainerConfigError');
    const byName = Object.fromEntries(p!.status!.containerStatuses!.map((c) => [c.name, c.state!.waiting!.message!]));
    assert.match(byName.dots!, /subPath "\.\.\/escape" must not contain '\.\.'/);
    assert.match(byName.link!, /symlink that points outside the volume/);
    assert.deepEqual(await fs.readdir(outside), [], 'nothing created outside the volume');
    assert.equal((await fs.stat(path.join(podDir(uidOf('esc')), '..', '..', 'escape')).catch(() => undefined)), undefined);
    await remove('esc.json', 'esc');
  });

  it('recursiveReadOnly on a runtime without recursive read-only mounts (containerd 1.x): IfPossible is a read-only mount, Enabled is not created and says why', async function () {
    await t.writeManifest('rro.json', pod('rro', [
      sh('enabled', 'exec sleep 3600', { volumeMounts: [{ name: 'v', mountPath: '/v', readOnly: true, recursiveReadOnly: 'Enabled' }] }),
      sh('ifpossible', 'exec sleep 3600', { volumeMounts: [{ name: 'v', mountPath: '/v', readOnly: true, recursiveReadOnly: 'IfPossible' }] }),
    ], [{ name: 'v', emptyDir: {} }]));
    const p = await t.waitForPod('rro', (x) => {
      const byName = new Map((x?.status?.containerStatuses ?? []).map((c) => [c.name, c.state]));
      return byName.get('enabled')?.waiting?.reason === 'CreateContainerConfigError' && byName.get('ifpossible')?.running !== undefined;
    }, 40_000, 'enabled refused, ifpossible running');
    const enabled = p!.status!.containerStatuses!.find((c) => c.name === 'enabled')!;
    assert.match(enabled.state!.waiting!.message!, /volumeMount "v": recursiveReadOnly Enabled: requested recursive read-only mode, but it is not supported by the runtime/);
    assert.notEqual((await exec('rro', 'ifpossible', ['sh', '-c', 'echo x > /v/f'])).code, 0, 'the IfPossible mount is read-only');
    await remove('rro.json', 'rro');
  });

  it('waits with a clear reason for an unknown volume type', async function () {
    await t.writeManifest('nfs.json', pod('nfs', [sh('main', 'exec sleep 3600', { volumeMounts: [{ name: 'n', mountPath: '/n' }] })], [{ name: 'n', nfs: { server: 'nfs.example', path: '/x' } }]));
    const p = await t.waitForPod('nfs', (x) => /no volume plugin/.test(waitingMessage(x)), 20_000, 'waiting');
    assert.equal(waitingMessage(p), 'MountVolume.SetUp failed for volume "n": no volume plugin for type "nfs"');
    await remove('nfs.json', 'nfs');
  });

  for (const which of ['plain', 'staged'] as const) {
    it(`mounts a CSI inline volume through the driver (${which}), with the upstream volume context, and cleans it up`, async function () {
      const drv = which === 'plain' ? plain : staged;
      const name = `csi-${which}`;
      await t.writeManifest(`${name}.json`, pod(name, [sh('main', 'echo written > /csi/f; exec sleep 3600', { volumeMounts: [{ name: 'data', mountPath: '/csi' }] })], [
        { name: 'data', csi: { driver: drv.options.name, volumeAttributes: { size: '1Mi' } } },
      ], { serviceAccountName: 'builder' }));
      await t.waitForPod(name, isRunning, 40_000, 'Running');
      const uid = uidOf(name);
      const handle = ephemeralVolumeHandle(uid, 'data');
      const backing = path.join(drv.dataDir, handle, 'f');
      for (let i = 0; i < 50 && !(await fs.stat(backing).catch(() => undefined)); i++) await sleep(100);
      assert.equal(await fs.readFile(backing, 'utf8'), 'written\n', 'the pod wrote into the driver\'s volume');
      const target = path.join(podDir(uid), 'volumes', 'kubernetes.io~csi', 'data', 'mount');
      assert.equal((await readMounts()).filter((m) => m.mountPoint === target).length, 1);
      const publish = drv.requests.filter(([m, r]) => m === 'NodePublishVolume' && r.volumeId === handle).at(-1)![1];
      assert.equal(publish.targetPath, target);
      assert.deepEqual(
        Object.fromEntries(Object.entries(publish.volumeContext as Record<string, string>).sort()),
        Object.fromEntries(Object.entries({ size: '1Mi', [CONTEXT_KEYS.ephemeral]: 'true', [CONTEXT_KEYS.podName]: `${name}-test-node`, [CONTEXT_KEYS.podNamespace]: ns, [CONTEXT_KEYS.podUID]: uid, [CONTEXT_KEYS.serviceAccount]: 'builder' }).sort()),
      );
      // As upstream: an inline volume is published directly, never staged, even by a driver with STAGE_UNSTAGE_VOLUME.
      assert.equal(publish.stagingTargetPath, '');
      assert.equal(drv.count('NodeStageVolume'), 0);
      await remove(`${name}.json`, name);
      assert.ok(drv.requests.some(([m, r]) => m === 'NodeUnpublishVolume' && r.volumeId === handle));
      assert.equal(drv.count('NodeUnstageVolume'), 0);
      assert.deepEqual(await mountsUnder(t.config.rootDir), []);
    });
  }

  it('mounts once a driver registers after the pod was created; de-registers it when its socket goes', async function () {
    const late = new FakeCsiDriver({ name: 'late.csi.test', dir: path.join(dir, 'drv-late'), registryDir: path.join(t.config.rootDir, 'plugins_registry') });
    drivers.push(late);
    await t.writeManifest('late.json', pod('late', [sh('main', 'exec sleep 3600', { volumeMounts: [{ name: 'data', mountPath: '/csi' }] })], [{ name: 'data', csi: { driver: 'late.csi.test' } }]));
    const p = await t.waitForPod('late', (x) => /not found in the list of registered CSI drivers/.test(waitingMessage(x)), 20_000, 'waiting for the driver');
    assert.match(waitingMessage(p), /^MountVolume.SetUp failed for volume "data": .*driver name late.csi.test not found in the list of registered CSI drivers/);
    await late.start();
    await t.waitForPod('late', isRunning, 40_000, 'Running');
    assert.deepEqual(late.registrationStatuses.at(-1), { pluginRegistered: true, error: '' });
    await remove('late.json', 'late');
    // De-registration: a pod needing the driver waits again.
    await late.stopRegistration();
    await sleep(1000);
    await t.writeManifest('late2.json', pod('late2', [sh('main', 'exec sleep 3600', { volumeMounts: [{ name: 'data', mountPath: '/csi' }] })], [{ name: 'data', csi: { driver: 'late.csi.test' } }]));
    await t.waitForPod('late2', (x) => /not found in the list of registered CSI drivers/.test(waitingMessage(x)), 20_000, 'waiting after de-registration');
    await remove('late2.json', 'late2');
  });

  it('shows a driver\'s NodePublish errors on the pod, leaks nothing, and mounts once the driver recovers', async function () {
    staged.failNext('NodePublishVolume', 3, 13, 'disk on fire');
    await t.writeManifest('flaky.json', pod('flaky', [sh('main', 'exec sleep 3600', { volumeMounts: [{ name: 'data', mountPath: '/csi' }] })], [{ name: 'data', csi: { driver: staged.options.name } }]));
    const p = await t.waitForPod('flaky', (x) => /disk on fire/.test(waitingMessage(x)), 20_000, 'waiting with the driver error');
    assert.match(waitingMessage(p), /MountVolume.SetUp failed for volume "data": .*NodePublishVolume: rpc error: code = Internal desc = disk on fire/);
    await t.waitForPod('flaky', isRunning, 40_000, 'Running after the driver recovered');
    const uid = uidOf('flaky');
    const mounts = await readMounts();
    const target = path.join(podDir(uid), 'volumes', 'kubernetes.io~csi', 'data', 'mount');
    assert.equal(mounts.filter((m) => m.mountPoint === target).length, 1, 'mounted exactly once');
    const handle = ephemeralVolumeHandle(uid, 'data');
    const stagings = mounts.filter((m) => m.mountPoint.includes(`/plugins/kubernetes.io/csi/${staged.options.name}/`));
    assert.deepEqual(stagings.map((s) => s.mountPoint), [], 'no staging mount (inline volumes are not staged)');
    assert.ok(staged.count('NodePublishVolume') >= 4);
    void handle;
    await remove('flaky.json', 'flaky');
    assert.deepEqual(await mountsUnder(t.config.rootDir), []);
  });

  it('after a kubelet restart recognises mounted volumes: nothing mounted twice, nothing leaked', async function () {
    await writeObject('secrets', 'restart-secret', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'restart-secret' }, stringData: { k: 'v' } });
    await t.writeManifest('restart.json', pod('restart', [sh('main', 'exec sleep 3600', { volumeMounts: [{ name: 'mem', mountPath: '/mem' }, { name: 'sec', mountPath: '/sec' }, { name: 'data', mountPath: '/csi' }] })], [
      { name: 'mem', emptyDir: { medium: 'Memory' } },
      { name: 'sec', secret: { secretName: 'restart-secret' } },
      { name: 'data', csi: { driver: staged.options.name } },
    ]));
    await t.waitForPod('restart', isRunning, 40_000, 'Running');
    const uid = uidOf('restart');
    const before = (await mountsUnder(t.config.rootDir)).sort();
    const publishes = staged.count('NodePublishVolume');
    const stages = staged.count('NodeStageVolume');
    const containerId = t.pod('restart')!.status!.containerStatuses![0]!.containerID;

    await t.stop();
    t = await startTestKubelet(kubeletOptions());
    await t.waitForPod('restart', (p) => isRunning(p) && p!.status!.containerStatuses![0]!.containerID === containerId, 30_000, 'adopted');
    await sleep(3000); // a few syncs (syncFrequency 1s)
    const after = (await mountsUnder(t.config.rootDir)).sort();
    assert.deepEqual(after, before, 'the same mounts');
    const all = await readMounts();
    for (const mp of after) assert.equal(all.filter((m) => m.mountPoint === mp).length, 1, `${mp} mounted once`);
    assert.equal(staged.count('NodePublishVolume'), publishes, 'no NodePublishVolume again');
    assert.equal(staged.count('NodeStageVolume'), stages, 'no NodeStageVolume again');
    assert.equal((await exec('restart', 'main', ['cat', '/sec/k'])).out, 'v');
    await remove('restart.json', 'restart');
    assert.deepEqual(await mountsUnder(t.config.rootDir), [], 'nothing leaked');
    void uid;
  });
});
