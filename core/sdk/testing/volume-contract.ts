import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import type { VolumeMountRequest, VolumeMountResult } from '../../hooks.ts';
import type { ObjectSource } from '../../objects/object-source.ts';
import { mountCount, mountsUnder, unmount } from '../../volumes/mount-utils.ts';
import { checkContract, describeContract, type ContractFailure, type ContractRule } from './contract.ts';
import { hookContext } from '../../util/cancellation.ts';
import type { PluginsUnderTest } from './plugin-harness.ts';

/**
 * The volume-provider contract: what the volume manager relies on from a plugin that taps
 * `mountVolume.for(type)` / `unmountVolume.for(type)`. Set-up is repeated on every sync of
 * a pod and after every kubelet restart (with what the provider returned before, `previous`),
 * so it must be idempotent; tear-down must leave nothing mounted, and may be repeated.
 */

export interface VolumeContractSubject {
  /** The volume type: the key of the volume's source in a pod spec. */
  type: string;
  /** A volume of that type, named `name`, that the provider can set up on this machine. */
  volume(name: string): V1Volume;
  /** The kubelet root dir the contract's pods live under (the contract removes what it made). */
  rootDir: string;
  /** Applies the provider's plugin as a kubelet start does (e.g. with startPluginsForTest); called again to simulate a restart. */
  start(): Promise<PluginsUnderTest>;
  /** Secrets and ConfigMaps the pods refer to, if the volume needs any. */
  objects?: ObjectSource;
}

const NO_OBJECTS: ObjectSource = { configMap: async () => undefined, secret: async () => undefined };

interface Scenario {
  s: VolumeContractSubject;
  plugins: PluginsUnderTest | undefined;
  run: string;
  pods: string[];
}

interface PodVolume {
  pod: V1Pod;
  volume: V1Volume;
  dir: string;
}

function newPodVolume(sc: Scenario): PodVolume {
  const uid = crypto.randomUUID();
  sc.pods.push(uid);
  const volume = sc.s.volume('data');
  const pod: V1Pod = {
    metadata: { name: `contract-${sc.run}-${sc.pods.length}`, namespace: 'contract', uid },
    spec: { containers: [{ name: 'c', image: 'contract', volumeMounts: [{ name: 'data', mountPath: '/data' }] }], volumes: [volume] },
  };
  const dir = path.join(sc.s.rootDir, 'pods', uid, 'volumes', `contract~${sc.s.type}`, 'data');
  return { pod, volume, dir };
}

async function plugins(sc: Scenario): Promise<PluginsUnderTest> {
  sc.plugins ??= await sc.s.start();
  return sc.plugins;
}

async function mount(sc: Scenario, pv: PodVolume, previous: VolumeMountResult | undefined, signal?: AbortSignal): Promise<VolumeMountResult> {
  const hook = (await plugins(sc)).hooks.mountVolume.get(sc.s.type);
  assert.ok(hook && hook.taps.length > 0, `no plugin taps mountVolume.for('${sc.s.type}')`);
  await fs.mkdir(path.dirname(pv.dir), { recursive: true, mode: 0o750 });
  const req: VolumeMountRequest = { pod: pv.pod, volume: pv.volume, type: sc.s.type, dir: pv.dir, rootDir: sc.s.rootDir, previous, objects: sc.s.objects ?? NO_OBJECTS, nodeName: 'contract-node' };
  const result = await hook.promise(req, hookContext(signal));
  assert.ok(result && typeof result.path === 'string' && result.path, `mountVolume.for('${sc.s.type}') returned no path (${JSON.stringify(result)})`);
  return result;
}

async function unmountVolume(sc: Scenario, pv: PodVolume, mounted: VolumeMountResult): Promise<void> {
  const hook = (await plugins(sc)).hooks.unmountVolume.get(sc.s.type);
  assert.ok(hook && hook.taps.length > 0, `no plugin taps unmountVolume.for('${sc.s.type}')`);
  const done = await hook.promise({ podUID: pv.pod.metadata!.uid!, volumeName: pv.volume.name, type: sc.s.type, dir: pv.dir, rootDir: sc.s.rootDir, mounted }, hookContext());
  assert.ok(done, `unmountVolume.for('${sc.s.type}') did not report the volume torn down`);
}

async function restart(sc: Scenario): Promise<void> {
  await sc.plugins?.close();
  sc.plugins = undefined;
  await plugins(sc);
}

/** The rules, in the order they run. */
export const volumeContractRules: ReadonlyArray<ContractRule<Scenario>> = [
  {
    name: 'set-up gives a path a container can use: it exists and is writable',
    async run(sc) {
      const pv = newPodVolume(sc);
      const r = await mount(sc, pv, undefined);
      await fs.writeFile(path.join(r.path, 'contract-probe'), 'ok');
      assert.equal(await fs.readFile(path.join(r.path, 'contract-probe'), 'utf8'), 'ok');
      await unmountVolume(sc, pv, r);
    },
  },
  {
    name: 'set-up again with `previous` is idempotent: the same path, mounted at most once, the data kept',
    async run(sc) {
      const pv = newPodVolume(sc);
      const first = await mount(sc, pv, undefined);
      await fs.writeFile(path.join(first.path, 'kept'), 'yes');
      const second = await mount(sc, pv, first);
      assert.equal(second.path, first.path, 'the path changed on a second set-up');
      assert.ok((await mountCount(second.path)) <= 1, `${second.path} is mounted ${await mountCount(second.path)} times`);
      assert.equal(await fs.readFile(path.join(second.path, 'kept'), 'utf8'), 'yes', 'a second set-up lost the data');
      await unmountVolume(sc, pv, second);
    },
  },
  {
    name: 'after a kubelet restart, set-up with `previous` adopts the volume: the same path, not mounted again, the data kept',
    async run(sc) {
      const pv = newPodVolume(sc);
      const before = await mount(sc, pv, undefined);
      await fs.writeFile(path.join(before.path, 'kept'), 'yes');
      const mountsBefore = await mountCount(before.path);
      // What the volume manager persisted survives as JSON: the provider gets it back, not its objects.
      const persisted = JSON.parse(JSON.stringify(before)) as VolumeMountResult;
      await restart(sc);
      const after = await mount(sc, pv, persisted);
      assert.equal(after.path, before.path, 'the path changed after a restart');
      assert.equal(await mountCount(after.path), mountsBefore, 'mounted again after a restart');
      assert.equal(await fs.readFile(path.join(after.path, 'kept'), 'utf8'), 'yes', 'the data is gone after a restart');
      await unmountVolume(sc, pv, after);
    },
  },
  {
    name: 'tear-down leaves nothing mounted under the volume dir, and nothing of the volume in it',
    async run(sc) {
      const pv = newPodVolume(sc);
      const r = await mount(sc, pv, undefined);
      await fs.writeFile(path.join(r.path, 'f'), 'x');
      await unmountVolume(sc, pv, r);
      assert.deepEqual(await mountsUnder(pv.dir), [], 'mounts left under the volume dir');
      const left = await fs.readdir(pv.dir).catch(() => [] as string[]);
      assert.deepEqual(left, [], `files left in ${pv.dir}`);
    },
  },
  {
    // The core gives up on a set-up when the pod is to be terminated or the tap outlives
    // hookTimeout (the tap's ctx.signal): a provider must not mount what nobody will tear down.
    name: 'set-up given an aborted signal is refused and leaves nothing mounted under the volume dir',
    async run(sc) {
      const pv = newPodVolume(sc);
      const gaveUp = new AbortController();
      gaveUp.abort(new Error('the pod is to be terminated'));
      const t0 = Date.now();
      await mount(sc, pv, undefined, gaveUp.signal).then(
        (r) => assert.fail(`set-up with an aborted signal succeeded (${r.path}); it must be refused`),
        (err: unknown) => assert.ok(!(err instanceof assert.AssertionError), String(err)),
      );
      assert.ok(Date.now() - t0 < 10_000, `refused only after ${Date.now() - t0} ms`);
      assert.deepEqual(await mountsUnder(pv.dir), [], 'mounts left under the volume dir');
    },
  },
  {
    name: 'tear-down again, after the volume is gone, is no error',
    async run(sc) {
      const pv = newPodVolume(sc);
      const r = await mount(sc, pv, undefined);
      await unmountVolume(sc, pv, r);
      await unmountVolume(sc, pv, r);
    },
  },
  {
    name: "two pods' volumes are separate: what one writes, the other does not see",
    async run(sc) {
      const a = newPodVolume(sc);
      const b = newPodVolume(sc);
      const ra = await mount(sc, a, undefined);
      const rb = await mount(sc, b, undefined);
      assert.notEqual(ra.path, rb.path);
      await fs.writeFile(path.join(ra.path, 'only-a'), 'a');
      await assert.rejects(fs.stat(path.join(rb.path, 'only-a')), "pod b's volume shows pod a's file");
      await unmountVolume(sc, a, ra);
      await unmountVolume(sc, b, rb);
    },
  },
];

/** Unmounts and removes whatever the contract's pods left (after a broken rule), and closes the plugins. */
async function sweep(sc: Scenario): Promise<void> {
  await sc.plugins?.close().catch(() => {});
  sc.plugins = undefined;
  for (const uid of sc.pods) {
    const dir = path.join(sc.s.rootDir, 'pods', uid);
    for (const mp of (await mountsUnder(dir).catch(() => [] as string[])).reverse()) await unmount(mp).catch(() => {});
    await fs.rm(dir, { recursive: true, force: true }).catch(() => {});
  }
  sc.pods = [];
}

const scenario = (s: VolumeContractSubject): Scenario => ({ s, plugins: undefined, run: crypto.randomBytes(4).toString('hex'), pods: [] });

/** Runs every rule against a volume provider; returns the broken ones (empty: it keeps the contract). */
export async function checkVolumeContract(subject: VolumeContractSubject): Promise<ContractFailure[]> {
  return checkContract(volumeContractRules, subject, scenario, sweep);
}

/** Declares the volume-provider contract as a mocha suite, one test per rule. */
export function describeVolumeContract(title: string, subject: () => Promise<VolumeContractSubject>, teardown?: () => Promise<void>): void {
  describeContract(`volume-provider contract: ${title}`, volumeContractRules, subject, scenario, sweep, teardown);
}
