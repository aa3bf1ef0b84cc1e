import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { createHooks, type VolumeMountRequest, type VolumeUnmountRequest } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import { VolumeManager, VolumeSetupError, pluginDirName, volumeType } from '../../core/volumes/volume-manager.ts';
import type { ObjectSource } from '../../core/apiserver/object-cache.ts';

/** These providers read no Secrets or ConfigMaps. */
const noObjects: ObjectSource = { configMap: async () => undefined, secret: async () => undefined };

/** A provider of type `fake` that records calls; `fail` makes the next mount throw. */
function fakeProvider(hooks: ReturnType<typeof createHooks>, opts: { mountPoint?: boolean; requiresRemount?: boolean } = {}) {
  const calls: string[] = [];
  /** The mount table each teardown was handed (a whole pod's teardown reads one for all its volumes). */
  const tables: Array<readonly unknown[] | undefined> = [];
  const state = { fail: '' };
  hooks.mountVolume.for('fake').tapPromise('fake', async (r: VolumeMountRequest) => {
    calls.push(`mount ${r.volume.name}${r.previous ? ' (again)' : ''}`);
    if (state.fail) throw new Error(state.fail);
    await fs.mkdir(r.dir, { recursive: true });
    return { path: r.dir, ...(opts.mountPoint ? { mountPoint: true } : {}), ...(opts.requiresRemount ? { requiresRemount: true } : {}), data: { n: calls.length } };
  });
  hooks.unmountVolume.for('fake').tapPromise('fake', async (r: VolumeUnmountRequest) => {
    calls.push(`unmount ${r.volumeName}`);
    tables.push(r.mountTable);
    await fs.rm(r.dir, { recursive: true, force: true });
    return true;
  });
  return { calls, state, tables };
}

const pod = (uid: string, volumes: V1Volume[]): V1Pod => ({ metadata: { name: 'p', namespace: 'default', uid }, spec: { containers: [], volumes } });
const fake = (name: string) => ({ name, fake: {} }) as unknown as V1Volume;

describe('volume manager (desired → actual, restart reconstruction)', function () {
  let root: string;
  beforeEach(async () => (root = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-vm-'))));
  afterEach(() => fs.rm(root, { recursive: true, force: true }));

  const manager = (hooks = createHooks()) => new VolumeManager({ hooks, rootDir: root, logger: silentLogger(), objects: () => noObjects });

  it('names types and their dirs as upstream', function () {
    assert.equal(volumeType({ name: 'x', hostPath: { path: '/' } }), 'hostPath');
    assert.equal(volumeType({ name: 'x' }), 'emptyDir');
    assert.equal(pluginDirName('emptyDir'), 'kubernetes.io~empty-dir');
    assert.equal(pluginDirName('downwardAPI'), 'kubernetes.io~downward-api');
    assert.equal(pluginDirName('csi'), 'kubernetes.io~csi');
    assert.equal(pluginDirName('fancyVolume'), 'kubernetes.io~fancy-volume');
  });

  it('mounts each desired volume once; again on each sync only when it asked for requiresRemount', async function () {
    const hooks = createHooks();
    const once = fakeProvider(hooks);
    const vm = manager(hooks);
    await vm.start();
    await vm.setUpPod(pod('u1', [fake('a'), fake('b')]));
    await vm.setUpPod(pod('u1', [fake('a'), fake('b')]));
    assert.deepEqual(once.calls, ['mount a', 'mount b']);
    assert.equal(vm.mounted('u1').get('a')!.path, path.join(root, 'pods', 'u1', 'volumes', 'kubernetes.io~fake', 'a'));

    const hooks2 = createHooks();
    const again = fakeProvider(hooks2, { requiresRemount: true });
    const vm2 = new VolumeManager({ hooks: hooks2, rootDir: path.join(root, 'r2'), logger: silentLogger(), objects: () => noObjects });
    await vm2.start();
    await vm2.setUpPod(pod('u1', [fake('a')]));
    await vm2.setUpPod(pod('u1', [fake('a')]));
    assert.deepEqual(again.calls, ['mount a', 'mount a (again)']);
  });

  it('tears down a volume that left the spec, and everything (with the pod dir) on tearDownPod', async function () {
    const hooks = createHooks();
    const p = fakeProvider(hooks);
    const vm = manager(hooks);
    await vm.start();
    await vm.setUpPod(pod('u1', [fake('a'), fake('b'), fake('c')]));
    await vm.setUpPod(pod('u1', [fake('a'), fake('c')]));
    assert.deepEqual(p.calls, ['mount a', 'mount b', 'mount c', 'unmount b']);
    assert.equal(p.tables[0], undefined, 'one volume torn down on its own (the pod runs) reads its own table');
    await vm.tearDownPod('u1');
    assert.deepEqual(p.calls.slice(4), ['unmount c', 'unmount a']);
    assert.ok(Array.isArray(p.tables[1]) && p.tables[1].length > 0, 'the pod\'s teardown hands its providers the mount table');
    assert.equal(p.tables[2], p.tables[1], 'one table for all the pod\'s volumes');
    await assert.rejects(fs.stat(path.join(root, 'pods', 'u1')));
    assert.equal(vm.actualState().has('u1'), false);
  });

  it('reports every failed volume with upstream\'s wording and an unknown type clearly; the good ones stay mounted', async function () {
    const hooks = createHooks();
    const p = fakeProvider(hooks);
    const vm = manager(hooks);
    await vm.start();
    p.state.fail = 'backend down';
    const err = await vm.setUpPod(pod('u1', [fake('a'), { name: 'n', nfs: { server: 's', path: '/' } }])).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof VolumeSetupError);
    assert.equal(err.message, 'MountVolume.SetUp failed for volume "a": backend down; MountVolume.SetUp failed for volume "n": no volume plugin for type "nfs"');
    p.state.fail = '';
    await vm.setUpPod(pod('u1', [fake('a')]));
    assert.deepEqual([...vm.mounted('u1').keys()], ['a']);
  });

  it('after a restart knows what was mounted (no second mount); forgets a mount point that is gone (mounted again)', async function () {
    const hooks = createHooks();
    const p = fakeProvider(hooks);
    const vm = manager(hooks);
    await vm.start();
    await vm.setUpPod(pod('u1', [fake('a')]));

    const hooks2 = createHooks();
    const p2 = fakeProvider(hooks2);
    const restarted = manager(hooks2);
    await restarted.start();
    assert.deepEqual([...restarted.mounted('u1').keys()], ['a']);
    assert.equal(restarted.mounted('u1').get('a')!.data!.n, 1, 'the provider data survived');
    await restarted.setUpPod(pod('u1', [fake('a')]));
    assert.deepEqual(p2.calls, [], 'not mounted twice');
    void p;

    // A provider that said its path is a mount point: the path is not mounted (the node rebooted, say).
    const hooks3 = createHooks();
    const p3 = fakeProvider(hooks3, { mountPoint: true });
    const vm3 = new VolumeManager({ hooks: hooks3, rootDir: path.join(root, 'r3'), logger: silentLogger(), objects: () => noObjects });
    await vm3.start();
    await vm3.setUpPod(pod('u2', [fake('m')]));
    const hooks4 = createHooks();
    const p4 = fakeProvider(hooks4, { mountPoint: true });
    const vm4 = new VolumeManager({ hooks: hooks4, rootDir: path.join(root, 'r3'), logger: silentLogger(), objects: () => noObjects });
    await vm4.start();
    assert.equal(vm4.mounted('u2').size, 0, 'a stale mount is forgotten');
    await vm4.setUpPod(pod('u2', [fake('m')]));
    assert.deepEqual(p4.calls, ['mount m'], 'set up again');
    void p3;
  });


  it('a kubelet killed in the middle of a pod\'s set-up knows each volume set up before the kill; a line torn by the kill costs only its own volume', async function () {
    const hooks = createHooks();
    const p = fakeProvider(hooks);
    // The third volume's set-up never returns: the kubelet is "killed" while it runs.
    hooks.mountVolume.for('hang').tapPromise('hang', () => new Promise(() => {}));
    const vm = manager(hooks);
    await vm.start();
    void vm.setUpPod(pod('u1', [fake('a'), fake('b'), { name: 'c', hang: {} } as unknown as V1Volume]));
    const podDir = path.join(root, 'pods', 'u1');
    const journal = path.join(podDir, 'kubelet-ts-volumes.journal');
    for (let i = 0; i < 100 && (await fs.readFile(journal, 'utf8').catch(() => '')).split('\n').filter(Boolean).length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    // What a kill in the middle of the next append leaves.
    await fs.appendFile(journal, '{"name":"c","type":"hang","di');

    const hooks2 = createHooks();
    const p2 = fakeProvider(hooks2);
    hooks2.mountVolume.for('hang').tapPromise('hang', async (r: VolumeMountRequest) => {
      await fs.mkdir(r.dir, { recursive: true });
      return { path: r.dir };
    });
    const restarted = manager(hooks2);
    await restarted.start();
    assert.deepEqual([...restarted.mounted('u1').keys()].sort(), ['a', 'b'], 'the volumes whose set-up returned');
    assert.equal(restarted.mounted('u1').get('b')!.data!.n, 2, 'with their providers\' data');
    assert.equal(await fs.stat(journal).catch(() => undefined), undefined, 'the journal is folded into the record at start');
    await restarted.setUpPod(pod('u1', [fake('a'), fake('b'), { name: 'c', hang: {} } as unknown as V1Volume]));
    assert.deepEqual(p2.calls, [], 'a and b not set up twice');
    assert.deepEqual([...restarted.mounted('u1').keys()].sort(), ['a', 'b', 'c']);
    const record = JSON.parse(await fs.readFile(path.join(podDir, 'kubelet-ts-volumes.json'), 'utf8')) as { volumes: Array<{ name: string }> };
    assert.deepEqual(record.volumes.map((v) => v.name).sort(), ['a', 'b', 'c'], 'the record holds the whole set once the set-up ended');
    void p;
  });
  it('cleans up the dirs of pods no one owns, through their providers', async function () {
    const hooks = createHooks();
    const p = fakeProvider(hooks);
    const vm = manager(hooks);
    await vm.start();
    await vm.setUpPod(pod('keep', [fake('a')]));
    await vm.setUpPod(pod('orphan', [fake('a')]));
    await fs.mkdir(path.join(root, 'pods', 'stray', 'volumes', 'kubernetes.io~empty-dir', 'x'), { recursive: true });
    await vm.cleanupOrphans((uid) => uid === 'keep');
    assert.deepEqual((await fs.readdir(path.join(root, 'pods'))).sort(), ['keep']);
    assert.deepEqual(p.calls, ['mount a', 'mount a', 'unmount a']);
  });
});
