import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { mountsUnder, unmount } from '../../core/volumes/mount-utils.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

/**
 * The pod-to-host boundary, attacked from inside pods on real containerd: a pod reaches the
 * host only where its spec grants it (a hostPath volume), never through a volume the kubelet
 * manages. Each test plants a canary in a host directory of its own and checks that no
 * container saw, wrote or removed it.
 */
describe('security: a pod never reaches the host outside what its spec grants', function () {
  this.timeout(180_000);
  let env: NodeEnv;
  let t: TestKubelet;
  let dir: string;
  /** A host directory no pod is granted: it holds a canary and must end as it began. */
  let host: string;
  const ns = 'security-test';

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-security-'));
    host = path.join(dir, 'host');
    await fs.mkdir(host);
    await fs.writeFile(path.join(host, 'canary'), 'host secret');
    await fs.mkdir(path.join(dir, 'objects', 'secrets', ns), { recursive: true });
    await fs.mkdir(path.join(dir, 'objects', 'configmaps', ns), { recursive: true });
    await fs.writeFile(path.join(dir, 'objects', 'secrets', ns, 'token.yaml'), `apiVersion: v1\nkind: Secret\nmetadata: {name: token}\nstringData: {key: s3cret}\n`);
    await fs.writeFile(path.join(dir, 'objects', 'configmaps', ns, 'conf.yaml'), `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {app.conf: x=1}\n`);
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]],
      // Crashing containers restart at once and often: every restart is another subPath bind.
      config: { localObjectsDir: path.join(dir, 'objects'), syncFrequencyMs: 1000, crashLoopBackOff: { initialMs: 50, maxMs: 100 } },
      dir: path.join(dir, 'kubelet'),
    });
  });

  after(async function () {
    if (t) await t.dispose(60_000);
    const left = await mountsUnder(dir);
    for (const mp of left) await unmount(mp).catch(() => {});
    await fs.rm(dir, { recursive: true, force: true });
    assert.deepEqual(left, [], 'no mount left under the test dir');
  });

  const canaryIntact = async () => {
    assert.deepEqual((await fs.readdir(host)).sort(), ['canary'], 'the host directory holds only its canary');
    assert.equal(await fs.readFile(path.join(host, 'canary'), 'utf8'), 'host secret');
  };

  const sh = (name: string, script: string, extra: object = {}) => ({ name, image: env.images.busybox, command: ['sh', '-c', script], ...extra });
  const pod = (name: string, containers: object[], volumes: object[], spec: object = {}) =>
    podManifest(name, containers, { volumes, hostNetwork: true, terminationGracePeriodSeconds: 0, ...spec }, { namespace: ns });

  async function exec(name: string, container: string, script: string): Promise<{ out: string; code: number }> {
    const p = t.pod(name)!;
    const cs = p.status!.containerStatuses!.find((c) => c.name === container)!;
    const r = await t.kubelet.runtime.execSync(cs.containerID!.replace(/^.*:\/\//, ''), ['sh', '-c', script], 10);
    return { out: Buffer.concat([r.stdout, r.stderr]).toString().trim(), code: r.exitCode };
  }

  async function removePod(file: string, name: string): Promise<void> {
    await t.removeManifest(file);
    await t.waitForPod(name, (p) => p === undefined, 60_000, 'pod removed');
  }

  it('subPath: a container swapping a directory for a symlink to the host never gets another container the host path (CVE-2017-1002101)', async function () {
    // One container flips shared/d between a directory and a symlink to the host dir; four
    // others mount subPath d and restart every ~0.1 s. Every other directory lives 20 ms, short
    // enough to be swapped between the kubelet's check and the mount (a bind of the checked
    // directory then fails: it was removed); the others live 300 ms, so that binds of the real
    // directory also succeed when the machine is loaded and spawning mount(8) alone takes longer
    // than 20 ms (with 20 ms only, a loaded CI machine saw 0–8 victim restarts a minute). A
    // container that got the host dir at /mnt writes a file there: the host dir must stay as it
    // was.
    const flipper = sh('flipper', `cd /shared; i=0; while true; do rm -rf d; mkdir d; if [ $((i % 2)) = 0 ]; then sleep 0.3; else sleep 0.02; fi; rm -rf d; ln -s ${host} d; sleep 0.01; i=$((i + 1)); done`, { volumeMounts: [{ name: 'shared', mountPath: '/shared' }] });
    const victims = [1, 2, 3, 4].map((i) => sh(`victim${i}`, `touch /mnt/breach-victim${i}-$$ 2>/dev/null; ls /mnt > /dev/null; sleep 0.1; exit 1`, { volumeMounts: [{ name: 'shared', mountPath: '/mnt', subPath: 'd' }] }));
    let refused = 0;
    t.kubelet.hooks.podStatusChanged.tap('security-test', (p, status) => {
      if (p.metadata?.name !== 'race-test-node') return;
      refused += (status.containerStatuses ?? []).filter((c) => c.state?.waiting?.reason === 'CreateContainerConfigError').length;
    });
    await t.writeManifest('race.json', pod('race', [flipper, ...victims], [{ name: 'shared', emptyDir: {} }]));
    await t.waitForPod('race', (p) => p?.status?.containerStatuses?.find((c) => c.name === 'flipper')?.state?.running !== undefined, 60_000, 'flipper running');
    // The attack runs at least 20 s, and on (up to 60 s) until it has really raced: on a loaded
    // machine the victims' crash-loop back-off and refused binds can keep them under 10 restarts
    // in the first 20 s.
    const minimum = Date.now() + 20_000;
    const deadline = Date.now() + 60_000;
    let started = 0;
    let last: unknown;
    while (Date.now() < minimum || (Date.now() < deadline && (started < 10 || refused === 0))) {
      await sleep(500);
      const statuses = t.pod('race')?.status?.containerStatuses ?? [];
      last = statuses.map((c) => [c.name, c.restartCount, c.state]);
      started = statuses.filter((c) => c.name.startsWith('victim')).reduce((n, c) => n + (c.restartCount ?? 0), 0);
      assert.deepEqual((await fs.readdir(host)).filter((n) => n.startsWith('breach')), [], 'a container reached the host dir through its subPath');
    }
    await removePod('race.json', 'race');
    await canaryIntact();
    // The attack ran: victims restarted (their subPath was bound again each time) and some
    // binds were refused because d was a symlink out of the volume at that moment.
    assert.ok(started >= 10, `victims restarted ${started} times; last: ${JSON.stringify(last)}`);
    assert.ok(refused > 0, 'no bind was ever refused: the flipper did not race');
  });

  it('subPath: a symlink out of a hostPath volume is refused; the volume grants only its own path', async function () {
    const granted = path.join(dir, 'granted');
    await fs.mkdir(granted, { recursive: true });
    await fs.symlink(host, path.join(granted, 'up'));
    await t.writeManifest('hp.json', pod('hp', [sh('c', 'sleep 3600', { volumeMounts: [{ name: 'g', mountPath: '/mnt', subPath: 'up' }] })], [{ name: 'g', hostPath: { path: granted, type: 'Directory' } }]));
    const p = await t.waitForPod('hp', (x) => x?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError', 30_000, 'CreateContainerConfigError');
    assert.match(p!.status!.containerStatuses![0]!.state!.waiting!.message!, /up is a symlink that points outside the volume/);
    await removePod('hp.json', 'hp');
    await canaryIntact();
  });

  it('configMap, secret, downwardAPI and projected volumes are read-only in the container, whatever its volumeMounts say (CVE-2017-1002102)', async function () {
    const mounts = ['s', 'c', 'd', 'p'].map((n) => ({ name: n, mountPath: `/${n}`, readOnly: false }));
    const volumes = [
      { name: 's', secret: { secretName: 'token' } },
      { name: 'c', configMap: { name: 'conf' } },
      { name: 'd', downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
      { name: 'p', projected: { sources: [{ configMap: { name: 'conf' } }, { secret: { name: 'token' } }] } },
    ];
    await t.writeManifest('api-vols.json', pod('api-vols', [sh('c', 'sleep 3600', { volumeMounts: mounts })], volumes));
    await t.waitForPod('api-vols', isRunning, 60_000, 'Running');
    for (const m of ['s', 'c', 'd', 'p']) {
      const write = await exec('api-vols', 'c', `touch /${m}/planted`);
      assert.notEqual(write.code, 0, `/${m} is writable`);
      assert.match(write.out, /Read-only file system/);
      const swap = await exec('api-vols', 'c', `cd /${m} && rm -f ..data && ln -s ${host} ..data`);
      assert.notEqual(swap.code, 0, `..data of /${m} could be replaced`);
    }
    assert.equal((await exec('api-vols', 'c', 'cat /s/key')).out, 's3cret');
    await removePod('api-vols.json', 'api-vols');
    await canaryIntact();
  });

  it('the atomic writer never follows a `..data` link out of the volume: a planted link is replaced at the next sync, the host dir untouched', async function () {
    // What a writable mount would have let a container do (and what an earlier kubelet turned
    // into a recursive delete of the host dir): plant `..data` → host dir, change the secret so
    // the next sync writes a new version and removes "the old one".
    const secretFile = path.join(dir, 'objects', 'secrets', ns, 'rotating.yaml');
    await fs.writeFile(secretFile, `apiVersion: v1\nkind: Secret\nmetadata: {name: rotating}\nstringData: {key: one}\n`);
    await t.writeManifest('writer.json', pod('writer', [sh('c', 'sleep 3600', { volumeMounts: [{ name: 's', mountPath: '/s' }] })], [{ name: 's', secret: { secretName: 'rotating' } }]));
    await t.waitForPod('writer', isRunning, 60_000, 'Running');
    const uid = t.pod('writer')!.metadata!.uid!;
    const volDir = path.join(t.config.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~secret', 's');
    await fs.unlink(path.join(volDir, '..data'));
    await fs.symlink(host, path.join(volDir, '..data'));
    await fs.writeFile(secretFile, `apiVersion: v1\nkind: Secret\nmetadata: {name: rotating}\nstringData: {key: two}\n`);
    const deadline = Date.now() + 15_000;
    while ((await exec('writer', 'c', 'cat /s/key')).out !== 'two') {
      assert.ok(Date.now() < deadline, 'the secret update did not reach the container');
      await sleep(250);
    }
    assert.match(await fs.readlink(path.join(volDir, '..data')), /^\.\.\d{4}_/);
    await removePod('writer.json', 'writer');
    await canaryIntact();
  });

  it('hostPath type checks refuse what the type does not allow, with the reason', async function () {
    const file = path.join(dir, 'a-file');
    await fs.writeFile(file, 'x');
    await fs.symlink(file, path.join(dir, 'link-to-file'));
    const cases: Array<[string, object, RegExp]> = [
      ['hp-dir', { path: file, type: 'Directory' }, /hostPath type check failed: .*a-file is not a directory/],
      ['hp-link', { path: path.join(dir, 'link-to-file'), type: 'Directory' }, /is not a directory/],
      ['hp-sock', { path: file, type: 'Socket' }, /is not a socket file/],
    ];
    for (const [name, hostPath] of cases) {
      await t.writeManifest(`${name}.json`, pod(name, [sh('c', 'sleep 3600', { volumeMounts: [{ name: 'h', mountPath: '/h' }] })], [{ name: 'h', hostPath }]));
    }
    for (const [name, , reason] of cases) {
      const p = await t.waitForPod(name, (x: V1Pod | undefined) => /MountVolume.SetUp failed/.test(x?.status?.containerStatuses?.[0]?.state?.waiting?.message ?? ''), 30_000, 'FailedMount');
      assert.match(p!.status!.containerStatuses![0]!.state!.waiting!.message!, reason);
      assert.equal(p!.status!.containerStatuses![0]!.state!.waiting!.reason, 'ContainerCreating');
    }
    for (const [name] of cases) await removePod(`${name}.json`, name);
  });
});
