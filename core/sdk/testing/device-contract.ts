import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { AllocationRefused, acceptAllocation } from '../../devices/allocation-policy.ts';
import { deviceIdProblem, isExtendedResourceName } from '../../devices/resource-names.ts';
import { checkContract, describeContract, RuleNotApplicable, type ContractFailure, type ContractRule } from './contract.ts';
import type { PluginsUnderTest, RecordedDeviceProvider } from './plugin-harness.ts';

/**
 * The device provider contract: what the core's device manager relies on from a provider of
 * an extended resource (`ctx.devices().register(...)`, an in-process `DeviceProvider`, or a
 * gRPC device plugin through the `device-plugins` plugin). The contract starts the plugin as a
 * kubelet does, watches what it registers and lists, calls the provider as the device manager
 * does, admits pods through the device manager, and restarts the plugin to see it register again.
 */

/** What the contract needs to check a device provider. */
export interface DeviceProviderContractSubject {
  /**
   * Applies and starts the plugin that provides the resource, as a kubelet start does
   * (`startPluginsForTest(entries, { rootDir, pods })`): `pods` are the pods the "kubelet" runs.
   * Called again with the same state to simulate a kubelet restart.
   */
  start(host: { pods: () => V1Pod[] }): Promise<PluginsUnderTest>;
  /** The resource whose provider the contract checks (the plugin may serve others). */
  resourceName: string;
  /** How long the provider may take to register and list its devices after a start (default 30 s). */
  registerTimeoutMs?: number;
}

interface Scenario {
  s: DeviceProviderContractSubject;
  run: string;
  n: number;
  plugins: PluginsUnderTest | undefined;
  pods: Map<string, V1Pod>;
}

interface RawDevice { id?: unknown; health?: unknown }

async function plugins(sc: Scenario): Promise<PluginsUnderTest> {
  sc.plugins ??= await sc.s.start({ pods: () => [...sc.pods.values()] });
  return sc.plugins;
}

/** The latest registration of the resource once it listed devices; fails naming a refusal or a silence. */
async function registered(sc: Scenario): Promise<RecordedDeviceProvider> {
  const p = await plugins(sc);
  const timeout = sc.s.registerTimeoutMs ?? 30_000;
  const deadline = Date.now() + timeout;
  for (;;) {
    const mine = p.deviceProviders.filter((r) => r.resourceName === sc.s.resourceName);
    const last = mine.at(-1);
    if (last?.refused) assert.fail(`the device manager refused the registration of ${sc.s.resourceName}: ${last.refused}`);
    if (last && !last.closed() && last.updates.some(Array.isArray)) return last;
    if (Date.now() > deadline) {
      const others = p.deviceProviders.map((r) => r.resourceName).filter((r) => r !== sc.s.resourceName);
      assert.fail(last
        ? `${sc.s.resourceName} registered but ${last.closed() ? 'closed its registration' : last.updates.length > 0 ? `sent no device list (${JSON.stringify(last.updates.at(-1))?.slice(0, 100)})` : 'sent no device list'} within ${timeout} ms`
        : `no provider registered ${sc.s.resourceName} within ${timeout} ms${others.length ? ` (registered: ${[...new Set(others)].join(', ')})` : ''}`);
    }
    await sleep(100);
  }
}

function latestDevices(rec: RecordedDeviceProvider): RawDevice[] {
  return rec.updates.filter(Array.isArray).at(-1) as RawDevice[];
}

async function healthyIds(sc: Scenario): Promise<string[]> {
  const ids = latestDevices(await registered(sc)).filter((d) => d?.health === 'Healthy' && typeof d.id === 'string').map((d) => d.id as string);
  assert.ok(ids.length > 0, `${sc.s.resourceName} lists no healthy device: the rules that allocate cannot run`);
  return [...new Set(ids)];
}

function newPod(sc: Scenario, devices: number): V1Pod {
  const uid = crypto.randomUUID();
  const pod: V1Pod = {
    metadata: { name: `dc-${sc.run}-${++sc.n}`, namespace: 'device-contract', uid },
    spec: { containers: [{ name: 'c', image: 'device-contract', resources: { limits: { [sc.s.resourceName]: String(devices) }, requests: { [sc.s.resourceName]: String(devices) } } }] },
  };
  sc.pods.set(uid, pod);
  return pod;
}

function releaseAll(sc: Scenario): void {
  for (const uid of sc.pods.keys()) sc.plugins?.devices.release(uid);
  sc.pods.clear();
}

function expectAccepted(answer: unknown, rootDir: string, what: string): void {
  try {
    acceptAllocation(answer, rootDir);
  } catch (err) {
    if (err instanceof AllocationRefused) assert.fail(`${what} answered what the kubelet refuses: ${err.message}`);
    throw err;
  }
}

/** The rules, in the order they run. */
export const deviceProviderContractRules: ReadonlyArray<ContractRule<Scenario>> = [
  {
    name: 'registers its resource, an extended resource name, and lists its devices after a start',
    async run(sc) {
      assert.ok(isExtendedResourceName(sc.s.resourceName), `the subject's resourceName ${JSON.stringify(sc.s.resourceName)} is no extended resource name (domain/name, outside kubernetes.io)`);
      await registered(sc);
    },
  },
  {
    name: 'its device list names each device once, by an ID of printable ASCII (at most 256 characters), with health Healthy or Unhealthy',
    async run(sc) {
      const devices = latestDevices(await registered(sc));
      const seen = new Set<unknown>();
      for (const [i, d] of devices.entries()) {
        const problem = deviceIdProblem(d?.id);
        assert.equal(problem, undefined, `device ${i}: ${problem}`);
        assert.ok(!seen.has(d.id), `device ID ${JSON.stringify(d.id)} is listed twice`);
        seen.add(d.id);
        assert.ok(d.health === 'Healthy' || d.health === 'Unhealthy', `device ${JSON.stringify(d.id)} has health ${JSON.stringify(d.health)}, not Healthy or Unhealthy`);
      }
    },
  },
  {
    name: 'lists at least one healthy device',
    async run(sc) {
      await healthyIds(sc);
    },
  },
  {
    name: 'allocate of a healthy device answers what the kubelet accepts (clean absolute paths, no mount of / or of the kubelet\'s root dir, device nodes under /dev)',
    async run(sc) {
      const [id] = await healthyIds(sc);
      const rec = await registered(sc);
      const answer = await rec.provider.allocate([id!]);
      expectAccepted(answer, (await plugins(sc)).config.rootDir, `allocate(["${id}"])`);
    },
  },
  {
    name: 'allocate of a device it does not list is refused',
    async run(sc) {
      const rec = await registered(sc);
      const bogus = `kts-contract-no-such-device-${sc.run}`;
      let answered: unknown;
      try {
        answered = await rec.provider.allocate([bogus]);
      } catch {
        return;
      }
      assert.fail(`allocate(["${bogus}"]) of a device it never listed succeeded: ${JSON.stringify(answered)?.slice(0, 300)}`);
    },
  },
  {
    name: 'preferredAllocation (when offered) answers the size asked, from the available devices, with those that must be included',
    async run(sc) {
      const rec = await registered(sc);
      if (!rec.provider.preferredAllocation) throw new RuleNotApplicable('the provider offers no preferredAllocation');
      const ids = await healthyIds(sc);
      const size = Math.min(2, ids.length);
      const mustInclude = ids.slice(0, 1);
      const preferred = await rec.provider.preferredAllocation({ available: ids, mustInclude, size });
      assert.ok(Array.isArray(preferred), `preferredAllocation answered ${JSON.stringify(preferred)}, not a list`);
      assert.equal(new Set(preferred).size, size, `preferredAllocation answered ${JSON.stringify(preferred)} for size ${size}`);
      for (const id of preferred) assert.ok(ids.includes(id), `preferredAllocation answered ${JSON.stringify(id)}, which is not available`);
      for (const id of mustInclude) assert.ok(preferred.includes(id), `preferredAllocation left out ${JSON.stringify(id)}, which must be included`);
    },
  },
  {
    name: 'preStart (when required) succeeds for an allocated device',
    async run(sc) {
      const rec = await registered(sc);
      if (!rec.provider.preStart) throw new RuleNotApplicable('the provider asks for no preStart');
      const [id] = await healthyIds(sc);
      await rec.provider.allocate([id!]);
      await rec.provider.preStart([id!]);
    },
  },
  {
    name: 'through the kubelet, every healthy device it lists goes to one pod each, and a pod beyond them is refused (UnexpectedAdmissionError)',
    async run(sc) {
      const ids = await healthyIds(sc);
      const { devices } = await plugins(sc);
      try {
        const given: string[] = [];
        for (let i = 0; i < ids.length; i++) {
          const pod = newPod(sc, 1);
          const refused = await devices.admit(pod);
          assert.equal(refused, undefined, `pod ${i + 1} of ${ids.length} (one device each) was refused: ${refused?.message}`);
          const held = devices.allocations(pod.metadata!.uid!).flatMap((a) => a.deviceIds);
          assert.equal(held.length, 1, `pod ${i + 1} holds ${JSON.stringify(held)}`);
          given.push(held[0]!);
          const allocation = await devices.containerAllocation(pod, pod.spec!.containers[0]!);
          assert.ok(allocation, `pod ${i + 1}: its container gets nothing of its allocation`);
        }
        assert.deepEqual([...given].sort(), [...ids].sort(), 'the pods did not get the healthy devices one each');
        const extra = await devices.admit(newPod(sc, 1));
        assert.equal(extra?.reason, 'UnexpectedAdmissionError', `a pod beyond the ${ids.length} healthy devices was ${extra ? `refused with ${extra.reason}` : 'admitted'}`);
      } finally {
        releaseAll(sc);
      }
    },
  },
  {
    name: 'after a kubelet restart it registers its resource again, with the same devices',
    async run(sc) {
      const before = latestDevices(await registered(sc)).map((d) => String(d.id)).sort();
      await sc.plugins?.close();
      sc.plugins = undefined;
      const again = latestDevices(await registered(sc)).map((d) => String(d.id)).sort();
      assert.deepEqual(again, before, 'the device IDs changed across the restart (allocations in the checkpoint name devices by ID)');
    },
  },
];

async function sweep(sc: Scenario): Promise<void> {
  releaseAll(sc);
  await sc.plugins?.close().catch(() => {});
  sc.plugins = undefined;
}

const scenario = (s: DeviceProviderContractSubject): Scenario => ({ s, run: crypto.randomBytes(4).toString('hex'), n: 0, plugins: undefined, pods: new Map() });

/** Runs every rule against a device provider; returns the broken ones (empty: it keeps the contract). Rules about what it does not offer are skipped. */
export async function checkDeviceProviderContract(subject: DeviceProviderContractSubject): Promise<ContractFailure[]> {
  return checkContract(deviceProviderContractRules, subject, scenario, sweep);
}

/**
 * Declares the device provider contract as a mocha suite, one test per rule:
 *
 *     describeDeviceProviderContract('my-gpus', async () => ({ resourceName: 'example.com/gpu',
 *       start: ({ pods }) => startPluginsForTest([['my-gpu-plugin', {}]], { rootDir, pods }) }));
 */
export function describeDeviceProviderContract(title: string, subject: () => Promise<DeviceProviderContractSubject>, teardown?: () => Promise<void>): void {
  describeContract(`device provider contract: ${title}`, deviceProviderContractRules, subject, scenario, sweep, teardown);
}
