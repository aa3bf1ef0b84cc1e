import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isNotFound } from '../../errors.ts';
import { ANNOTATION, LABEL } from '../../runtime/labels.ts';
import type { ContainerConfig, ContainerEvent, ContainerEventsEnd, ContainerRuntime, ContainerState, PodSandboxConfig } from '../../runtime/types.ts';
import { checkContract, describeContract, RuleNotApplicable, type ContractFailure, type ContractRule } from './contract.ts';

/**
 * The runtime contract: what the core relies on from the provider of the `runtime` slot,
 * rule by rule. A vendor runs it against their runtime plugin with mocha
 * (`describeRuntimeContract`); each rule is one test named for the rule, so a failure says
 * which promise the runtime broke.
 */

/** What the contract needs to drive a runtime. */
export interface RuntimeContractSubject {
  runtime: ContainerRuntime;
  /** An image the runtime can pull and run, with the commands below. */
  image: string;
  /** A directory the contract may write sandbox log directories under (it removes what it made). */
  workDir: string;
  /** Commands in that image: one that runs until stopped, one that exits with a code, one that prints a line and exits 0. */
  commands: { run(): string[]; exit(code: number): string[]; print(line: string): string[] };
  /** How long a container may take to reach a state (default 20 s). */
  stateTimeoutMs?: number;
  /**
   * The cgroup parent of the contract's sandboxes, in the runtime's driver's form: none by
   * default (a cgroupfs runtime picks its own); a runtime with the systemd driver needs a slice
   * (`system.slice`), as the kubelet gives it the pod's.
   */
  cgroupParent?: string;
  /**
   * How the contract reads and removes what the runtime wrote under workDir (containers' logs):
   * by default this machine's filesystem; a runtime on another machine (a VM, a remote node)
   * gives its own.
   */
  files?: { read(path: string): Promise<string>; remove(path: string): Promise<void> };
}

/** How far a finish time may read before the start time of a container that exits at once (two clocks of the runtime's). */
const START_FINISH_SLACK_MS = 1000;
/** How long a runtime gets to answer that it has no event stream (an answer, not a wait for events). */
const EVENT_STREAM_SETTLE_MS = 500;

/** Every sandbox and container the contract makes carries this label, so what a failed rule left is removed. */
const RUN_LABEL = 'kubelet-ts.contract/run';

interface Scenario {
  s: RuntimeContractSubject;
  run: string;
  n: number;
  /** The image pulled once, by the first rule that needs it (each rule runs alone too, e.g. with --grep). */
  pulled?: Promise<unknown>;
}

function sandboxConfig(sc: Scenario, extraLabels: Record<string, string> = {}): PodSandboxConfig {
  const uid = crypto.randomUUID();
  const name = `contract-${sc.run}-${++sc.n}`;
  return {
    metadata: { name, uid, namespace: 'contract', attempt: 0 },
    // The node's network (no CNI needed) has the node's UTS namespace: a sandbox may not set a hostname there.
    hostname: '',
    logDirectory: path.join(sc.s.workDir, `pods-${sc.run}`, uid),
    portMappings: [],
    labels: { [LABEL.podName]: name, [LABEL.podNamespace]: 'contract', [LABEL.podUID]: uid, [LABEL.managed]: 'true', [RUN_LABEL]: sc.run, ...extraLabels },
    annotations: { [ANNOTATION.podTerminationGracePeriod]: '0', 'contract.example/note': 'a value with spaces, = and : in it' },
    linux: { ...(sc.s.cgroupParent ? { cgroupParent: sc.s.cgroupParent } : {}), securityContext: { namespaceOptions: { network: 'NODE', pid: 'POD', ipc: 'POD' } } },
  };
}

function containerConfig(sc: Scenario, sb: PodSandboxConfig, name: string, command: string[]): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: { image: sc.s.image },
    command,
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: { [LABEL.containerName]: name, [LABEL.podName]: sb.metadata.name, [LABEL.podNamespace]: 'contract', [LABEL.podUID]: sb.metadata.uid, [RUN_LABEL]: sc.run },
    annotations: { [ANNOTATION.containerHash]: 'abc123', [ANNOTATION.containerRestartCount]: '0', [ANNOTATION.podTerminationGracePeriod]: '0' },
    logPath: `${name}/0.log`,
    linux: { resources: {}, securityContext: {} },
  };
}

async function newSandbox(sc: Scenario, labels: Record<string, string> = {}): Promise<{ id: string; config: PodSandboxConfig }> {
  const config = sandboxConfig(sc, labels);
  await fs.mkdir(config.logDirectory, { recursive: true });
  return { id: await sc.s.runtime.runPodSandbox(config), config };
}

async function newContainer(sc: Scenario, sb: { id: string; config: PodSandboxConfig }, name: string, command: string[], start = true): Promise<string> {
  await imagePulled(sc);
  const id = await sc.s.runtime.createContainer(sb.id, containerConfig(sc, sb.config, name, command), sb.config);
  if (start) await sc.s.runtime.startContainer(id);
  return id;
}

/** Pulls the subject's image once per run, for the first rule that needs it. */
async function imagePulled(sc: Scenario): Promise<void> {
  sc.pulled ??= sc.s.runtime.pullImage(sc.s.image);
  await sc.pulled;
}

async function waitState(sc: Scenario, id: string, state: ContainerState): Promise<void> {
  const deadline = Date.now() + (sc.s.stateTimeoutMs ?? 20_000);
  let last = '';
  for (let i = 0; i < 400 && Date.now() < deadline; i++) {
    last = (await sc.s.runtime.containerStatus(id)).state;
    if (last === state) return;
    await sleep(50);
  }
  assert.fail(`container ${id} did not reach ${state} (last state ${last})`);
}

async function expectNotFound(what: string, p: Promise<unknown>): Promise<void> {
  await p.then(
    () => assert.fail(`${what} answered for an id that is gone; it must throw NotFound (KubeletError code 'NotFound')`),
    (err) => assert.ok(isNotFound(err), `${what} threw ${(err as Error)?.message ?? err}, without code 'NotFound'`),
  );
}

/** The rules, in the order they run. */
export const runtimeContractRules: ReadonlyArray<ContractRule<Scenario>> = [
  {
    name: 'version names the runtime and its API version',
    async run({ s }) {
      const v = await s.runtime.version();
      assert.ok(v.runtimeName && v.runtimeVersion && v.runtimeApiVersion, `version() = ${JSON.stringify(v)}`);
    },
  },
  {
    name: 'status reports RuntimeReady and NetworkReady conditions',
    async run({ s }) {
      const types = (await s.runtime.status()).map((c) => c.type);
      for (const t of ['RuntimeReady', 'NetworkReady']) assert.ok(types.includes(t), `status() has no ${t} condition (has ${types.join(', ')})`);
    },
  },
  {
    name: 'pullImage returns a reference, and imageStatus finds the image',
    async run({ s }) {
      const ref = await s.runtime.pullImage(s.image);
      assert.ok(ref, 'pullImage returned an empty reference');
      assert.ok(await s.runtime.imageStatus(s.image), `imageStatus(${s.image}) is null after the pull`);
    },
  },
  {
    // Optional: a runtime without pullProgress shows pulls without figures. Checked with no pull
    // of the contract's running: the kubelet reads whatever the runtime has in flight.
    name: 'pullProgress, if offered, lists downloads with a name and whole byte counts, done never past a known total',
    async run({ s }) {
      if (typeof s.runtime.pullProgress !== 'function') throw new RuleNotApplicable('the runtime offers no pullProgress');
      const list = await s.runtime.pullProgress();
      assert.ok(Array.isArray(list), `pullProgress() answered ${JSON.stringify(list)}, not a list`);
      for (const p of list) {
        const where = `pullProgress() entry ${JSON.stringify(p)}`;
        assert.ok(typeof p.ref === 'string' && p.ref.length > 0, `${where}: no ref`);
        for (const n of [p.offsetBytes, p.totalBytes]) assert.ok(Number.isSafeInteger(n) && n >= 0, `${where}: byte counts must be whole and not negative`);
        assert.ok(p.totalBytes === 0 || p.offsetBytes <= p.totalBytes, `${where}: more bytes done than the total`);
        assert.ok(Number.isFinite(p.startedAt) && Number.isFinite(p.updatedAt), `${where}: times must be numbers`);
      }
    },
  },
  {
    name: 'a new sandbox is SANDBOX_READY with the metadata it was given',
    async run(sc) {
      const sb = await newSandbox(sc);
      const st = await sc.s.runtime.podSandboxStatus(sb.id);
      assert.equal(st.state, 'SANDBOX_READY');
      assert.deepEqual({ name: st.metadata.name, uid: st.metadata.uid, namespace: st.metadata.namespace }, { name: sb.config.metadata.name, uid: sb.config.metadata.uid, namespace: 'contract' });
    },
  },
  {
    name: 'sandbox labels and annotations round-trip through list and status (adoption after a restart reads them)',
    async run(sc) {
      const sb = await newSandbox(sc);
      const st = await sc.s.runtime.podSandboxStatus(sb.id);
      const listed = (await sc.s.runtime.listPodSandboxes()).find((x) => x.id === sb.id);
      assert.ok(listed, 'listPodSandboxes does not list the new sandbox');
      for (const [where, got] of [['podSandboxStatus', st], ['listPodSandboxes', listed]] as const) {
        for (const [k, v] of Object.entries(sb.config.labels)) assert.equal(got.labels[k], v, `${where}: label ${k}`);
        for (const [k, v] of Object.entries(sb.config.annotations)) assert.equal(got.annotations[k], v, `${where}: annotation ${k}`);
      }
    },
  },
  {
    name: 'listPodSandboxes filters by every label of the selector',
    async run(sc) {
      const a = await newSandbox(sc, { 'contract.example/pick': 'a' });
      const b = await newSandbox(sc, { 'contract.example/pick': 'b' });
      const ids = (await sc.s.runtime.listPodSandboxes({ labelSelector: { [RUN_LABEL]: sc.run, 'contract.example/pick': 'a' } })).map((x) => x.id);
      assert.ok(ids.includes(a.id), 'the matching sandbox is not listed');
      assert.ok(!ids.includes(b.id), 'a sandbox whose label differs is listed');
    },
  },
  {
    name: 'stopPodSandbox is idempotent and leaves the sandbox SANDBOX_NOTREADY',
    async run(sc) {
      const sb = await newSandbox(sc);
      await sc.s.runtime.stopPodSandbox(sb.id);
      await sc.s.runtime.stopPodSandbox(sb.id);
      assert.equal((await sc.s.runtime.podSandboxStatus(sb.id)).state, 'SANDBOX_NOTREADY');
    },
  },
  {
    name: 'removePodSandbox removes it, again is no error, and its status is then NotFound',
    async run(sc) {
      const sb = await newSandbox(sc);
      await sc.s.runtime.stopPodSandbox(sb.id);
      await sc.s.runtime.removePodSandbox(sb.id);
      await sc.s.runtime.removePodSandbox(sb.id);
      await expectNotFound('podSandboxStatus', sc.s.runtime.podSandboxStatus(sb.id));
      assert.ok(!(await sc.s.runtime.listPodSandboxes()).some((x) => x.id === sb.id), 'a removed sandbox is still listed');
    },
  },
  {
    name: 'a created container is CONTAINER_CREATED; started, CONTAINER_RUNNING with its start time',
    async run(sc) {
      const sb = await newSandbox(sc);
      const id = await newContainer(sc, sb, 'main', sc.s.commands.run(), false);
      assert.equal((await sc.s.runtime.containerStatus(id)).state, 'CONTAINER_CREATED');
      await sc.s.runtime.startContainer(id);
      await waitState(sc, id, 'CONTAINER_RUNNING');
      const st = await sc.s.runtime.containerStatus(id);
      assert.ok(st.startedAt > 0, `startedAt = ${st.startedAt}`);
      assert.equal(st.metadata.name, 'main');
      // CRI's ContainerStatus carries no sandbox id: listContainers is where it is promised.
      assert.equal((await sc.s.runtime.listContainers({ podSandboxId: sb.id })).find((c) => c.id === id)?.podSandboxId, sb.id, 'listContainers gives the container its sandbox id');
    },
  },
  {
    name: 'container labels and annotations round-trip through list and status',
    async run(sc) {
      const sb = await newSandbox(sc);
      const config = containerConfig(sc, sb.config, 'labelled', sc.s.commands.run());
      await imagePulled(sc);
      const id = await sc.s.runtime.createContainer(sb.id, config, sb.config);
      const st = await sc.s.runtime.containerStatus(id);
      const listed = (await sc.s.runtime.listContainers({ podSandboxId: sb.id })).find((c) => c.id === id);
      assert.ok(listed, 'listContainers does not list the new container');
      for (const [where, got] of [['containerStatus', st], ['listContainers', listed]] as const) {
        for (const [k, v] of Object.entries(config.labels)) assert.equal(got.labels[k], v, `${where}: label ${k}`);
        for (const [k, v] of Object.entries(config.annotations)) assert.equal(got.annotations[k], v, `${where}: annotation ${k}`);
      }
    },
  },
  {
    name: 'listContainers filters by sandbox and by label',
    async run(sc) {
      const a = await newSandbox(sc);
      const b = await newSandbox(sc);
      const ca = await newContainer(sc, a, 'one', sc.s.commands.run(), false);
      const cb = await newContainer(sc, b, 'two', sc.s.commands.run(), false);
      const inA = (await sc.s.runtime.listContainers({ podSandboxId: a.id })).map((c) => c.id);
      assert.deepEqual(inA, [ca], 'podSandboxId filter');
      const byLabel = (await sc.s.runtime.listContainers({ labelSelector: { [LABEL.containerName]: 'two', [RUN_LABEL]: sc.run } })).map((c) => c.id);
      assert.deepEqual(byLabel, [cb], 'labelSelector filter');
    },
  },
  {
    name: 'execSync runs a command in a running container and returns its output and exit code',
    async run(sc) {
      const sb = await newSandbox(sc);
      const id = await newContainer(sc, sb, 'main', sc.s.commands.run());
      await waitState(sc, id, 'CONTAINER_RUNNING');
      const r = await sc.s.runtime.execSync(id, ['echo', 'contract'], 10);
      assert.equal(r.exitCode, 0);
      assert.equal(Buffer.from(r.stdout).toString().trim(), 'contract');
      const f = await sc.s.runtime.execSync(id, ['false'], 10);
      assert.notEqual(f.exitCode, 0, 'a failing command exits non-zero');
    },
  },
  {
    name: 'a container that exits is CONTAINER_EXITED with its exit code and finish time',
    async run(sc) {
      const sb = await newSandbox(sc);
      const id = await newContainer(sc, sb, 'quitter', sc.s.commands.exit(3));
      await waitState(sc, id, 'CONTAINER_EXITED');
      const st = await sc.s.runtime.containerStatus(id);
      assert.equal(st.exitCode, 3);
      // Not before its start, up to a little slack: a runtime records the two times at
      // different points (containerd: the start as its CRI plugin handles the start, the exit
      // as the shim reports it), so a container that exits at once can read as finished a
      // millisecond before it started (seen in CI on a loaded machine: 1 ms).
      assert.ok(st.startedAt > 0 && st.finishedAt > 0, `finishedAt ${st.finishedAt}, startedAt ${st.startedAt}: both must be set`);
      assert.ok(st.finishedAt >= st.startedAt - START_FINISH_SLACK_MS, `finishedAt ${st.finishedAt} is more than ${START_FINISH_SLACK_MS} ms before startedAt ${st.startedAt}`);
    },
  },
  {
    // Optional: without events PLEG relists every period only. An event is a prompt for the
    // core to look (it relists), so the rule asks that one comes for a container's start and
    // one for its exit, each well formed, and that the caller ends the stream with its signal.
    name: "containerEvents, if offered, reports a container's start and its exit, and ends when its signal aborts",
    async run(sc) {
      const events = sc.s.runtime.containerEvents?.bind(sc.s.runtime);
      if (!events) throw new RuleNotApplicable('the runtime offers no containerEvents');
      const seen: ContainerEvent[] = [];
      const ac = new AbortController();
      const stream = events((e) => seen.push(e), { signal: ac.signal });
      stream.catch(() => {});
      // A runtime without a stream says so at once; one with a stream keeps it open.
      const early = await Promise.race([stream, sleep(EVENT_STREAM_SETTLE_MS).then(() => undefined)]);
      if (early === 'unsupported') throw new RuleNotApplicable('the runtime answers that it streams no container events');
      assert.equal(early, undefined, `containerEvents ended (${String(early)}) before its signal aborted`);
      try {
        const sb = await newSandbox(sc);
        const id = await newContainer(sc, sb, 'evented', sc.s.commands.exit(0));
        await waitState(sc, id, 'CONTAINER_EXITED');
        const has = (type: ContainerEvent['type']) => seen.some((e) => e.containerId === id && e.type === type);
        const deadline = Date.now() + (sc.s.stateTimeoutMs ?? 20_000);
        for (let i = 0; i < 400 && Date.now() < deadline && !(has('started') && has('stopped')); i++) await sleep(50);
        assert.ok(has('started'), `no 'started' event for container ${id}; events: ${JSON.stringify(seen.slice(-10))}`);
        assert.ok(has('stopped'), `no 'stopped' event for container ${id}; events: ${JSON.stringify(seen.slice(-10))}`);
        for (const e of seen) {
          assert.ok(typeof e.containerId === 'string' && e.containerId.length > 0, `an event without a container id: ${JSON.stringify(e)}`);
          assert.ok(['created', 'started', 'stopped', 'deleted'].includes(e.type), `an event of unknown type: ${JSON.stringify(e)}`);
          assert.ok(Number.isFinite(e.at) && e.at >= 0, `an event's time must be a number: ${JSON.stringify(e)}`);
        }
      } finally {
        ac.abort();
      }
      const end: ContainerEventsEnd = await stream;
      assert.equal(end, 'ended', "containerEvents must resolve 'ended' when its signal aborts");
    },
  },
  {
    name: "a container's output is in its log file at the sandbox's logDirectory + logPath",
    async run(sc) {
      const sb = await newSandbox(sc);
      const id = await newContainer(sc, sb, 'talker', sc.s.commands.print('hello from the contract'));
      await waitState(sc, id, 'CONTAINER_EXITED');
      const file = path.join(sb.config.logDirectory, 'talker', '0.log');
      let text = '';
      for (let i = 0; i < 40 && !text.includes('hello from the contract'); i++) {
        text = await (sc.s.files ? sc.s.files.read(file) : fs.readFile(file, 'utf8')).catch(() => '');
        if (!text.includes('hello from the contract')) await sleep(50);
      }
      assert.match(text, /hello from the contract/, `${file} does not hold the container's output`);
    },
  },
  {
    name: 'stopContainer is idempotent and leaves the container CONTAINER_EXITED',
    async run(sc) {
      const sb = await newSandbox(sc);
      const id = await newContainer(sc, sb, 'main', sc.s.commands.run());
      await waitState(sc, id, 'CONTAINER_RUNNING');
      await sc.s.runtime.stopContainer(id, 0);
      await sc.s.runtime.stopContainer(id, 0);
      assert.equal((await sc.s.runtime.containerStatus(id)).state, 'CONTAINER_EXITED');
    },
  },
  {
    name: 'removeContainer removes it, again is no error, and its status is then NotFound',
    async run(sc) {
      const sb = await newSandbox(sc);
      const id = await newContainer(sc, sb, 'main', sc.s.commands.run());
      await sc.s.runtime.stopContainer(id, 0);
      await sc.s.runtime.removeContainer(id);
      await sc.s.runtime.removeContainer(id);
      await expectNotFound('containerStatus', sc.s.runtime.containerStatus(id));
      assert.ok(!(await sc.s.runtime.listContainers({ podSandboxId: sb.id })).some((c) => c.id === id), 'a removed container is still listed');
    },
  },
  {
    // The core aborts a call's signal when runtimeRequestTimeout expires or the tap that made it
    // was given up on (types.ts, ContainerRuntime): work the core no longer waits for must not
    // go on. A call whose signal is already aborted is the case every runtime can show at once.
    name: 'a call honours its signal (options.signal): made with an aborted one, it is refused and does nothing',
    async run(sc) {
      const gaveUp = new AbortController();
      gaveUp.abort(new Error('the core gave up on this call'));
      const config = sandboxConfig(sc);
      await fs.mkdir(config.logDirectory, { recursive: true });
      const refused = async (what: string, call: () => Promise<unknown>) => {
        const t0 = Date.now();
        await new Promise((resolve) => resolve(call())).then(
          () => assert.fail(`${what} with an aborted signal succeeded; it must be refused (reject) without doing anything`),
          () => {},
        );
        assert.ok(Date.now() - t0 < 5000, `${what} with an aborted signal took ${Date.now() - t0} ms to be refused`);
      };
      const options = { signal: gaveUp.signal };
      await refused('runPodSandbox', () => sc.s.runtime.runPodSandbox(config, undefined, options));
      await refused('listPodSandboxes', () => sc.s.runtime.listPodSandboxes(undefined, options));
      await refused('version', () => sc.s.runtime.version(options));
      const made = (await sc.s.runtime.listPodSandboxes({ labelSelector: { [RUN_LABEL]: sc.run } })).filter((sb) => sb.metadata.uid === config.metadata.uid);
      assert.deepEqual(made, [], 'runPodSandbox with an aborted signal made a sandbox');
    },
  },
  {
    name: 'stopPodSandbox stops the containers in it',
    async run(sc) {
      const sb = await newSandbox(sc);
      const id = await newContainer(sc, sb, 'main', sc.s.commands.run());
      await waitState(sc, id, 'CONTAINER_RUNNING');
      await sc.s.runtime.stopPodSandbox(sb.id);
      await waitState(sc, id, 'CONTAINER_EXITED');
    },
  },
];

/** Removes every sandbox (and its containers) the contract made in this run. */
async function sweep(sc: Scenario): Promise<void> {
  const r = sc.s.runtime;
  for (const c of await r.listContainers({ labelSelector: { [RUN_LABEL]: sc.run } }).catch(() => [])) {
    await r.stopContainer(c.id, 0).catch(() => {});
    await r.removeContainer(c.id).catch(() => {});
  }
  for (const sb of await r.listPodSandboxes({ labelSelector: { [RUN_LABEL]: sc.run } }).catch(() => [])) {
    await r.stopPodSandbox(sb.id).catch(() => {});
    await r.removePodSandbox(sb.id).catch(() => {});
  }
  const pods = path.join(sc.s.workDir, `pods-${sc.run}`);
  await (sc.s.files ? sc.s.files.remove(pods) : fs.rm(pods, { recursive: true, force: true }));
}

const scenario = (s: RuntimeContractSubject): Scenario => ({ s, run: crypto.randomBytes(4).toString('hex'), n: 0 });

/**
 * Runs every rule against a runtime and returns the broken ones (an empty list: the runtime
 * keeps the contract). For use outside mocha, and to test the contract itself.
 */
export async function checkRuntimeContract(subject: RuntimeContractSubject): Promise<ContractFailure[]> {
  return checkContract(runtimeContractRules, subject, scenario, sweep);
}

/**
 * Declares the runtime contract as a mocha suite, one test per rule:
 *
 *     describeRuntimeContract('my-runtime', async () => ({ runtime, image, workDir, commands }));
 *
 * `subject` is called once, in a `before` hook; what the contract made is removed after.
 * `opts.timeoutMs`: each rule's time (default 60 s; a slow runtime, one in an emulated VM, needs more).
 */
export function describeRuntimeContract(title: string, subject: () => Promise<RuntimeContractSubject>, teardown?: () => Promise<void>, opts: { timeoutMs?: number } = {}): void {
  describeContract(`runtime contract: ${title}`, runtimeContractRules, subject, scenario, sweep, teardown, opts);
}
