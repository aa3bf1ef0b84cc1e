import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { isKubeletError, isNotFound } from '../../errors.ts';
import { buildSandboxConfig } from '../../pod/sandbox-config.ts';
import { LABEL } from '../../runtime/labels.ts';
import type { ContainerRuntime } from '../../runtime/types.ts';
import type { NetworkService, NetworkSetUpEvent, NetworkTearDownEvent, PodNetwork } from '../network.ts';
import { checkContract, describeContract, RuleNotApplicable, type ContractFailure, type ContractRule } from './contract.ts';
import { hookContext } from '../../util/cancellation.ts';
import type { PluginsUnderTest } from './plugin-harness.ts';

/**
 * The network contract: what the core and other plugins rely on from the provider of the
 * `network` slot (kubelet-ts `NetworkService`). The contract drives the plugin as a kubelet
 * does: it fires `beforeSandbox` and creates the pod's sandbox through the runtime slot (the
 * runtime calls the network plugin, as containerd calls cni-exec's delegate), stops and
 * removes it there, and watches the network's hooks and `attachment()`/`check()`.
 */

/** What the contract needs to drive a network plugin. */
export interface NetworkContractSubject {
  /**
   * Applies and starts the network plugin and a runtime that asks it for pod networks, as a
   * kubelet start does (startPluginsForTest). `pods` lists the pods the "kubelet" runs: pass it
   * to startPluginsForTest. Called again, with the same state, to simulate a kubelet restart.
   */
  start(host: { pods: () => V1Pod[] }): Promise<PluginsUnderTest>;
  /** A directory the contract may write pod log directories under (it removes what it made). */
  workDir: string;
  /** The namespace of the contract's pods (default `network-contract`); pods are named `nc-<run>-<n>`. */
  namespace?: string;
  /** The IPs the plugin's address management holds now (cni-exec with host-local: its data dir). Without it the release rules are skipped. */
  leasedIPs?(): Promise<string[]>;
  /** The plugin gives pods IPs the node can reach: the contract connects to one. Without it that rule is skipped. */
  reachableFromHost?: boolean;
  /** Breaks an attachment so that `check()` must fail. Default: deletes its interface inside its netns (nsenter and ip; needs root). */
  breakAttachment?(attachment: PodNetwork): Promise<void>;
}

/** The name the contract's own taps carry. */
const CONTRACT_TAP = 'network-contract';
/** Every sandbox the contract makes carries this label, so what a failed rule left is removed. */
const RUN_LABEL = 'kubelet-ts.contract/run';
/** How long one connection attempt to a pod IP may take, and how many the reachability rule makes. */
const CONNECT_TIMEOUT_MS = 2000;
const CONNECT_ATTEMPTS = 3;

interface Scenario {
  s: NetworkContractSubject;
  run: string;
  n: number;
  plugins: PluginsUnderTest | undefined;
  /** The plugins were started once: the sweep starts them again if a restart left them down. */
  started: boolean;
  /** The pods the contract's "kubelet" runs, by uid: what the plugin's `pods()` sees. */
  pods: Map<string, V1Pod>;
  setUps: NetworkSetUpEvent[];
  tearDowns: NetworkTearDownEvent[];
  /** Pods whose `networkSetUp` the contract's tap fails on purpose. */
  failSetUp: Set<string>;
}

interface Sandbox {
  id: string;
  pod: V1Pod;
}

async function plugins(sc: Scenario): Promise<PluginsUnderTest> {
  if (sc.plugins) return sc.plugins;
  const started = await sc.s.start({ pods: () => [...sc.pods.values()] });
  sc.plugins = started;
  sc.started = true;
  // Taps of "another plugin": they record what the hooks fire, and fail a set-up when told to.
  const hooks = started.slot('network').hooks;
  hooks.networkSetUp.tapPromise(CONTRACT_TAP, async (e) => {
    sc.setUps.push(e);
    if (sc.failSetUp.has(e.pod.metadata?.uid ?? '')) throw new Error('the network contract fails this networkSetUp on purpose');
  });
  hooks.networkTearDown.tapPromise(CONTRACT_TAP, async (e) => void sc.tearDowns.push(e));
  return started;
}

async function network(sc: Scenario): Promise<NetworkService> {
  return (await plugins(sc)).slot('network');
}

async function runtime(sc: Scenario): Promise<ContainerRuntime> {
  return (await plugins(sc)).slot('runtime');
}

async function restart(sc: Scenario): Promise<void> {
  await sc.plugins?.close();
  sc.plugins = undefined;
  await plugins(sc);
}

function newPod(sc: Scenario, hostNetwork = false): V1Pod {
  const uid = crypto.randomUUID();
  const pod: V1Pod = {
    metadata: { name: `nc-${sc.run}-${++sc.n}`, namespace: sc.s.namespace ?? 'network-contract', uid },
    spec: { containers: [{ name: 'c', image: 'network-contract' }], terminationGracePeriodSeconds: 0, ...(hostNetwork ? { hostNetwork: true } : {}) },
  };
  sc.pods.set(uid, pod);
  return pod;
}

/** Creates a pod's sandbox as the kubelet's sync does: the sandbox config, `beforeSandbox`, then the runtime. */
async function createSandbox(sc: Scenario, pod: V1Pod): Promise<string> {
  const p = await plugins(sc);
  const built = buildSandboxConfig(pod, 0, { podLogsDir: path.join(sc.s.workDir, `nc-pods-${sc.run}`) });
  built.labels[RUN_LABEL] = sc.run;
  const config = await p.hooks.beforeSandbox.promise(built, pod, hookContext());
  await fs.mkdir(config.logDirectory, { recursive: true });
  return p.slot('runtime').runPodSandbox(config);
}

async function newSandbox(sc: Scenario, hostNetwork = false): Promise<Sandbox> {
  const pod = newPod(sc, hostNetwork);
  return { id: await createSandbox(sc, pod), pod };
}

/** Stops and removes a sandbox, then forgets its pod, as the kubelet ends a pod. */
async function endSandbox(sc: Scenario, sb: Sandbox): Promise<void> {
  const r = await runtime(sc);
  await r.stopPodSandbox(sb.id);
  await r.removePodSandbox(sb.id);
  sc.pods.delete(sb.pod.metadata!.uid!);
}

async function attached(sc: Scenario, sb: Sandbox): Promise<PodNetwork> {
  const a = await (await network(sc)).attachment(sb.id);
  assert.ok(a, `attachment(${sb.id}) is undefined for a sandbox the runtime created on the pod network`);
  return a;
}

const setUpsOf = (sc: Scenario, id: string) => sc.setUps.filter((e) => e.sandboxId === id);
const tearDownsOf = (sc: Scenario, id: string) => sc.tearDowns.filter((e) => e.sandboxId === id);

async function leases(sc: Scenario): Promise<string[]> {
  if (!sc.s.leasedIPs) throw new RuleNotApplicable('the subject gives no leasedIPs(): the contract cannot see whether an IP is released');
  return sc.s.leasedIPs();
}

async function checkOf(sc: Scenario): Promise<(sandboxId: string) => Promise<void>> {
  const n = await network(sc);
  if (typeof n.check !== 'function') throw new RuleNotApplicable('the network service offers no check()');
  return (id) => n.check!(id);
}

/** Deletes the attachment's interface inside its network namespace: what a crashed agent or an operator's mistake does. */
function deleteInterface(a: PodNetwork): Promise<void> {
  if (!a.netns) throw new Error(`attachment of ${a.sandboxId} has no netns: give the subject a breakAttachment()`);
  return new Promise((resolve, reject) => {
    execFile('nsenter', [`--net=${a.netns}`, 'ip', 'link', 'delete', a.ifName], { timeout: 10_000 }, (err, _out, stderr) => {
      if (err) reject(new Error(`could not break ${a.ifName} in ${a.netns}: ${stderr.trim() || err.message}`));
      else resolve();
    });
  });
}

/** One TCP connection attempt: a pod's kernel answers even on a closed port (reset), so refused counts as reached. */
function reaches(ip: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: ip, port: 9, timeout: CONNECT_TIMEOUT_MS });
    const done = (why: string | undefined) => {
      socket.destroy();
      resolve(why);
    };
    socket.once('connect', () => done(undefined));
    socket.once('timeout', () => done(`no answer within ${CONNECT_TIMEOUT_MS} ms`));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED' ? undefined : (err.code ?? err.message)));
  });
}

async function expectRejected(what: string, p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => assert.fail(`${what} succeeded`),
    (err: unknown) => err,
  );
}

/** The rules, in the order they run. */
export const networkContractRules: ReadonlyArray<ContractRule<Scenario>> = [
  {
    name: 'a pod sandbox created through the runtime gets an attachment with at least one IP, naming the pod, and the runtime reports one of its IPs',
    async run(sc) {
      const sb = await newSandbox(sc);
      const a = await attached(sc, sb);
      assert.equal(a.sandboxId, sb.id, 'attachment().sandboxId');
      assert.ok(a.ips.length >= 1, `attachment(${sb.id}) has no IP`);
      for (const ip of a.ips) assert.ok(net.isIP(ip), `attachment IP ${JSON.stringify(ip)} is not an address without prefix length`);
      assert.equal(a.pod?.uid, sb.pod.metadata!.uid, 'attachment().pod names another pod, or none');
      const st = await (await runtime(sc)).podSandboxStatus(sb.id);
      assert.ok(a.ips.includes(st.ip), `the runtime reports sandbox IP ${JSON.stringify(st.ip)}, not one of the attachment's ${a.ips.join(', ')}`);
    },
  },
  {
    name: 'networkSetUp fires once for a new sandbox, with its pod, interface, netns and the attachment\'s IPs',
    async run(sc) {
      const sb = await newSandbox(sc);
      const a = await attached(sc, sb);
      const events = setUpsOf(sc, sb.id);
      assert.equal(events.length, 1, `networkSetUp fired ${events.length} times for sandbox ${sb.id}`);
      const e = events[0]!;
      assert.equal(e.pod.metadata?.uid, sb.pod.metadata!.uid, 'the event names another pod');
      assert.deepEqual(e.ips, a.ips, 'the event and attachment() disagree on the IPs');
      assert.equal(e.ifName, a.ifName, 'the event and attachment() disagree on the interface');
      assert.equal(e.netns, a.netns, 'the event and attachment() disagree on the netns');
      assert.equal(e.network, a.network, 'the event and attachment() disagree on the network');
    },
  },
  {
    name: 'two pods get different IPs',
    async run(sc) {
      const a = await attached(sc, await newSandbox(sc));
      const b = await attached(sc, await newSandbox(sc));
      const shared = a.ips.filter((ip) => b.ips.includes(ip));
      assert.deepEqual(shared, [], `two pods share ${shared.join(', ')}`);
    },
  },
  {
    name: 'a pod IP is reachable from the host',
    async run(sc) {
      if (!sc.s.reachableFromHost) throw new RuleNotApplicable('the subject does not say its pod IPs are reachable from the host (reachableFromHost)');
      const a = await attached(sc, await newSandbox(sc));
      const ip = a.ips[0]!;
      let why: string | undefined = 'not tried';
      for (let i = 0; i < CONNECT_ATTEMPTS && why !== undefined; i++) why = await reaches(ip);
      assert.equal(why, undefined, `pod IP ${ip} did not answer a TCP connection from the host (${CONNECT_ATTEMPTS} tries): ${why}`);
    },
  },
  {
    name: 'check() passes on a healthy attachment and rejects NotFound for a sandbox it never set up',
    async run(sc) {
      const check = await checkOf(sc);
      const sb = await newSandbox(sc);
      await check(sb.id);
      const err = await expectRejected('check() of a sandbox without an attachment', check(`nc-never-${sc.run}`));
      assert.ok(isNotFound(err), `check() of a sandbox without an attachment threw ${(err as Error)?.message ?? err}, without code 'NotFound'`);
    },
  },
  {
    name: 'check() fails with a coded error once the attachment\'s interface is broken',
    async run(sc) {
      const check = await checkOf(sc);
      const sb = await newSandbox(sc);
      const a = await attached(sc, sb);
      await (sc.s.breakAttachment ?? deleteInterface)(a);
      const err = await expectRejected(`check() of sandbox ${sb.id} after its ${a.ifName} was broken`, check(sb.id));
      assert.ok(isKubeletError(err) && !isNotFound(err), `check() threw ${(err as Error)?.message ?? err}: not a coded error (KubeletError) other than NotFound`);
    },
  },
  {
    name: 'stopping the sandbox fires networkTearDown once, naming it and its pod; stopping and removing again is harmless',
    async run(sc) {
      const sb = await newSandbox(sc);
      const r = await runtime(sc);
      await r.stopPodSandbox(sb.id);
      const events = tearDownsOf(sc, sb.id);
      assert.equal(events.length, 1, `networkTearDown fired ${events.length} times when the sandbox stopped`);
      assert.equal(events[0]!.podRef?.uid ?? events[0]!.pod?.metadata?.uid, sb.pod.metadata!.uid, 'the event names another pod, or none');
      await r.stopPodSandbox(sb.id);
      await r.removePodSandbox(sb.id);
      await r.removePodSandbox(sb.id);
      assert.equal(tearDownsOf(sc, sb.id).length, 1, 'networkTearDown fired again on a repeated stop or remove');
      sc.pods.delete(sb.pod.metadata!.uid!);
    },
  },
  {
    name: 'after tear-down attachment() is undefined',
    async run(sc) {
      const sb = await newSandbox(sc);
      await attached(sc, sb);
      await endSandbox(sc, sb);
      const left = await (await network(sc)).attachment(sb.id);
      assert.equal(left, undefined, `attachment(${sb.id}) still reports ${JSON.stringify(left)} after tear-down`);
    },
  },
  {
    name: 'after tear-down the pod\'s IPs are released',
    async run(sc) {
      const sb = await newSandbox(sc);
      const a = await attached(sc, sb);
      const held = await leases(sc);
      for (const ip of a.ips) assert.ok(held.includes(ip), `leasedIPs() does not list ${ip} while the pod has it: the subject's leasedIPs() looks in the wrong place`);
      await endSandbox(sc, sb);
      const still = (await leases(sc)).filter((ip) => a.ips.includes(ip));
      assert.deepEqual(still, [], `still leased after tear-down: ${still.join(', ')}`);
    },
  },
  {
    name: 'a networkSetUp tap that throws fails the sandbox and leaves no attachment, IP or ready sandbox behind',
    async run(sc) {
      const pod = newPod(sc);
      const uid = pod.metadata!.uid!;
      sc.failSetUp.add(uid);
      await expectRejected('runPodSandbox with a networkSetUp tap that throws', createSandbox(sc, pod));
      const event = sc.setUps.find((e) => e.pod.metadata?.uid === uid);
      assert.ok(event, 'networkSetUp never fired for the pod, so the failing tap never ran');
      assert.equal(await (await network(sc)).attachment(event.sandboxId), undefined, `attachment(${event.sandboxId}) is left after the failed set-up`);
      const ready = (await (await runtime(sc)).listPodSandboxes({ labelSelector: { [LABEL.podUID]: uid } })).filter((s) => s.state === 'SANDBOX_READY');
      assert.deepEqual(ready.map((s) => s.id), [], 'a ready sandbox is left for the pod whose network failed');
      if (sc.s.leasedIPs) {
        const still = (await sc.s.leasedIPs()).filter((ip) => event.ips.includes(ip));
        assert.deepEqual(still, [], `still leased after the failed set-up: ${still.join(', ')}`);
      }
      sc.pods.delete(uid);
    },
  },
  {
    name: 'a sandbox on the node\'s network gets no attachment and fires no networkSetUp',
    async run(sc) {
      const sb = await newSandbox(sc, true);
      assert.equal(await (await network(sc)).attachment(sb.id), undefined, 'a hostNetwork sandbox has an attachment');
      assert.equal(setUpsOf(sc, sb.id).length, 0, 'networkSetUp fired for a hostNetwork sandbox');
    },
  },
  {
    name: 'after a kubelet restart attachment() still reports the sandbox, and its tear-down still fires networkTearDown and releases it',
    async run(sc) {
      const sb = await newSandbox(sc);
      const before = await attached(sc, sb);
      const shape = (a: PodNetwork) => ({ ips: [...a.ips], ifName: a.ifName, network: a.network, pod: a.pod?.uid });
      const kept = shape(before);
      await restart(sc);
      assert.deepEqual(shape(await attached(sc, sb)), kept, 'the attachment changed across a restart');
      await endSandbox(sc, sb);
      assert.equal(tearDownsOf(sc, sb.id).length, 1, 'networkTearDown did not fire once after the restart');
      assert.equal(await (await network(sc)).attachment(sb.id), undefined, 'the attachment is left after tear-down');
      if (sc.s.leasedIPs) {
        const still = (await sc.s.leasedIPs()).filter((ip) => kept.ips.includes(ip));
        assert.deepEqual(still, [], `still leased after tear-down: ${still.join(', ')}`);
      }
    },
  },
];

/** Stops and removes every sandbox the contract made in this run (the plugins still running, so the network is taken down too), then closes the plugins. */
async function sweep(sc: Scenario): Promise<void> {
  // The network is taken down by the running plugin (cni-exec: containerd's DEL reaches it), so it must be up.
  const p = sc.plugins ?? (sc.started ? await sc.s.start({ pods: () => [] }).catch(() => undefined) : undefined);
  if (p) {
    const r = p.slot('runtime');
    for (const sb of await r.listPodSandboxes({ labelSelector: { [RUN_LABEL]: sc.run } }).catch(() => [])) {
      await r.stopPodSandbox(sb.id).catch(() => {});
      await r.removePodSandbox(sb.id).catch(() => {});
    }
    await p.close().catch(() => {});
  }
  sc.plugins = undefined;
  sc.pods.clear();
  await fs.rm(path.join(sc.s.workDir, `nc-pods-${sc.run}`), { recursive: true, force: true });
}

const scenario = (s: NetworkContractSubject): Scenario => ({
  s, run: crypto.randomBytes(4).toString('hex'), n: 0, plugins: undefined, started: false, pods: new Map(), setUps: [], tearDowns: [], failSetUp: new Set(),
});

/** Runs every rule against a network plugin; returns the broken ones (empty: it keeps the contract). Rules that do not apply to the subject are skipped. */
export async function checkNetworkContract(subject: NetworkContractSubject): Promise<ContractFailure[]> {
  return checkContract(networkContractRules, subject, scenario, sweep);
}

/**
 * Declares the network contract as a mocha suite, one test per rule:
 *
 *     describeNetworkContract('my-network', async () => ({ workDir, start: ({ pods }) =>
 *       startPluginsForTest([['my-runtime', {...}], ['my-network', {...}]], { rootDir, pods, memoryRuntime: false }) }));
 *
 * `subject` is called once, in a `before` hook; what the contract made is removed after.
 */
export function describeNetworkContract(title: string, subject: () => Promise<NetworkContractSubject>, teardown?: () => Promise<void>): void {
  describeContract(`network contract: ${title}`, networkContractRules, subject, scenario, sweep, teardown);
}
