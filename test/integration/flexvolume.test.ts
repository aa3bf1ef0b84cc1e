import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { mountsUnder, readMounts, unmount } from '../../core/volumes/mount-utils.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

/**
 * FlexVolume drivers (plugins/flexvolume) on real containerd: the drivers are executables in
 * the kubelet's volumePluginDir, as an operator installs them, speaking upstream's exec
 * protocol. `kts.test/tmpfs` mounts a tmpfs on the volume dir and writes the options it was
 * given into it; every call it gets is appended to a log the test reads.
 */
const DRIVER = `#!/bin/sh
log="$(dirname "$0")/calls.log"
echo "$1 $2" >> "$log"
case "$1" in
  init) echo '{"status":"Success","capabilities":{"attach":false}}' ;;
  mount)
    mount -t tmpfs -o size=1m kts-flex "$2" || { echo '{"status":"Failure","message":"tmpfs mount failed"}'; exit 1; }
    printf '%s' "$3" > "$2/options.json"
    echo '{"status":"Success"}' ;;
  unmount) umount "$2" && echo '{"status":"Success"}' ;;
  *) echo '{"status":"Not supported"}' ;;
esac
`;
/** A driver whose init answers no capabilities: upstream reads that as an attaching driver. */
const ATTACHING_DRIVER = `#!/bin/sh
case "$1" in
  init) echo '{"status":"Success"}' ;;
  *) echo '{"status":"Not supported"}' ;;
esac
`;

describe('flexVolume drivers on containerd', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let t: TestKubelet;
  let dir: string;
  let pluginDir: string;
  let objects: string;
  const ns = 'flex-test';

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-flex-'));
    pluginDir = path.join(dir, 'volume-plugins');
    objects = path.join(dir, 'objects');
    for (const [driver, script] of [['kts.test~tmpfs/tmpfs', DRIVER], ['kts.test~attacher/attacher', ATTACHING_DRIVER]] as const) {
      await fs.mkdir(path.join(pluginDir, path.dirname(driver)), { recursive: true });
      await fs.writeFile(path.join(pluginDir, driver), script, { mode: 0o755 });
    }
    await fs.mkdir(path.join(objects, 'secrets', ns), { recursive: true });
    await fs.writeFile(path.join(objects, 'secrets', ns, 'flex-creds.yaml'), JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'flex-creds', namespace: ns }, data: { token: Buffer.from('s3cr3t').toString('base64') } }));
    // The default bundle's flexvolume plugin, given the drivers' dir as an operator would (volumePluginDir).
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ['flexvolume', {}]] as never,
      config: { localObjectsDir: objects, volumePluginDir: pluginDir, syncFrequencyMs: 1000 },
      dir,
    });
  });

  after(async function () {
    if (t) {
      await t.removeEveryPod(30_000);
      await t.stop();
    }
    const left = dir ? await mountsUnder(dir) : [];
    for (const mp of left) await unmount(mp).catch(() => {});
    if (dir) await fs.rm(dir, { recursive: true, force: true });
    assert.deepEqual(left, [], 'no mount left under the test dir');
  });

  const pod = (name: string, volume: object, spec: object = {}) => podManifest(name, [{
    name: 'c', image: env.images.busybox, command: ['sh', '-c', 'cat /data/options.json; exec sleep 3600'], volumeMounts: [{ name: 'data', mountPath: '/data' }],
  }], { volumes: [{ name: 'data', ...volume }], hostNetwork: true, terminationGracePeriodSeconds: 0, ...spec }, { namespace: ns });
  const calls = async () => (await fs.readFile(path.join(pluginDir, 'kts.test~tmpfs', 'calls.log'), 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
  const waiting = (p: V1Pod | undefined) => p?.status?.containerStatuses?.[0]?.state?.waiting?.message ?? '';

  it('a driver mounts the volume with the pod\'s identity, fsGroup, options and Secret; the container sees it; unmount is the driver\'s', async function () {
    await t.writeManifest('flex.json', pod('flex', { flexVolume: { driver: 'kts.test/tmpfs', fsType: 'tmpfs', options: { color: 'blue' }, secretRef: { name: 'flex-creds' } } }, { securityContext: { fsGroup: 4321 } }));
    const p = (await t.waitForPod('flex', isRunning, 40_000, 'Running'))!;
    const uid = p.metadata!.uid!;
    const host = path.join(t.config.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~flex-volume', 'data');
    const given = JSON.parse(await fs.readFile(path.join(host, 'options.json'), 'utf8')) as Record<string, string>;
    assert.deepEqual(given, {
      color: 'blue',
      'kubernetes.io/fsType': 'tmpfs',
      'kubernetes.io/readwrite': 'rw',
      'kubernetes.io/pvOrVolumeName': 'data',
      'kubernetes.io/pod.name': p.metadata!.name,
      'kubernetes.io/pod.namespace': ns,
      'kubernetes.io/pod.uid': uid,
      'kubernetes.io/serviceAccount.name': 'default',
      'kubernetes.io/fsGroup': '4321',
      'kubernetes.io/secret/token': Buffer.from('s3cr3t').toString('base64'),
    });
    assert.equal((await readMounts()).filter((m) => m.mountPoint === host)[0]?.fsType, 'tmpfs', 'the driver\'s mount is the volume');
    assert.equal((await fs.stat(path.join(host, 'options.json'))).gid, 4321, 'the pod\'s fsGroup was given the volume, as upstream does for a driver that does not opt out');
    const id = p.status!.containerStatuses![0]!.containerID!.replace(/^.*:\/\//, '');
    const r = await t.kubelet.runtime.execSync(id, ['cat', '/data/options.json'], 10);
    assert.match(Buffer.from(r.stdout).toString(), /"kubernetes.io\/pod.uid":"[^"]+"/, 'the container sees what the driver mounted');
    assert.deepEqual((await calls()).map((c) => c.split(' ')[0]), ['init', 'mount']);

    await t.removeManifest('flex.json');
    await t.waitForPod('flex', (x) => x === undefined, 30_000, 'removed');
    assert.deepEqual((await calls()).map((c) => c.split(' ')[0]), ['init', 'mount', 'unmount']);
    assert.equal((await calls())[2], `unmount ${host}`);
    assert.deepEqual(await mountsUnder(path.join(t.config.rootDir, 'pods', uid)), []);
  });

  it('refuses an attaching driver, a reserved option key and a driver name that leaves the plugin dir, each with its reason; the kubelet goes on', async function () {
    const cases: Array<[string, object, RegExp]> = [
      ['flex-attach', { flexVolume: { driver: 'kts.test/attacher' } }, /FlexVolume driver kts.test\/attacher attaches volumes \(its init answers no capabilities, which upstream reads as "attach": true\)/],
      ['flex-reserved', { flexVolume: { driver: 'kts.test/tmpfs', options: { 'kubernetes.io/pod.namespace': 'kube-system' } } }, /volume "data": flexVolume.options: key "kubernetes.io\/pod.namespace" is reserved/],
      ['flex-escape', { flexVolume: { driver: '../tmpfs' } }, /flexVolume.driver "..\/tmpfs" is not vendor\/name/],
      ['flex-missing', { flexVolume: { driver: 'kts.test/absent' } }, /FlexVolume driver .*kts.test~absent\/absent is not installed/],
    ];
    const before = (await calls()).length;
    for (const [name, volume] of cases) await t.writeManifest(`${name}.json`, pod(name, volume));
    for (const [name, , re] of cases) {
      const p = await t.waitForPod(name, (x) => re.test(waiting(x)), 30_000, `${name}: FailedMount`);
      assert.match(waiting(p), /^MountVolume.SetUp failed for volume "data": plugin 'flexvolume' \(hook mountVolume\[flexVolume\]\): /);
      await t.removeManifest(`${name}.json`);
    }
    assert.deepEqual((await calls()).slice(before).filter((c) => c.startsWith('mount')), [], 'no refused volume reached a driver\'s mount');
    assert.equal(t.kubelet.healthz(), 'ok');
  });
});
