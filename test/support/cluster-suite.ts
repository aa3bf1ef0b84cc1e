import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CoordinationV1Api, CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import type { PluginEntry } from '../../core/config/types.ts';
import { controlPlaneOrSkip, type ControlPlane } from './control-plane.ts';
import { nodeEnvOrSkip } from './node-env.ts';
import { startTestKubelet, type TestKubelet } from './test-kubelet.ts';
import { waitFor } from './wait-for.ts';

/** What a test node is: its name and its kubelet's directory. */
export interface SuiteNode { name: string; dir: string }

/**
 * The set-up every test of a kubelet-ts node in the real cluster shares: real containerd (and a
 * CRI client to look at it), the run's control plane with admin clients, a temp directory, and
 * per-test cleanup run in reverse after each test. Call `clusterSuite()` inside a `describe`:
 * it registers the mocha hooks; the fields are set once `before` ran (with CI unset, the suite
 * skips naming what is missing).
 */
export class ClusterSuite {
  env!: NodeEnv;
  cp!: ControlPlane;
  core!: CoreV1Api;
  coordination!: CoordinationV1Api;
  /** A CRI client of the run's containerd, to check what the kubelet left running. */
  runtime!: CriRuntime;
  dir!: string;
  private counter = 0;
  private readonly cleanups: Array<() => Promise<unknown> | unknown> = [];

  /** Runs `fn` after the current test (cleanups run newest first; their errors are ignored). */
  onCleanup(fn: () => Promise<unknown> | unknown): void {
    this.cleanups.push(fn);
  }

  /** A name no other test of this run has: `kts-<what>-<pid>-<n>`. */
  uniqueName(what: string): string {
    return `kts-${what}-${process.pid}-${++this.counter}`;
  }

  /** A node of this test: its Node and Lease are deleted after the test. */
  node(what: string): SuiteNode {
    const name = this.uniqueName(what);
    this.onCleanup(async () => {
      await this.core.deleteNode({ name }).catch(() => {});
      await this.coordination.deleteNamespacedLease({ name, namespace: 'kube-node-lease' }).catch(() => {});
    });
    return { name, dir: path.join(this.dir, name) };
  }

  /**
   * A namespace of this test, deleted after it, once pods can be made in it: ServiceAccount
   * admission needs its `default` ServiceAccount, and pods with the service account volume need
   * its `kube-root-ca.crt` (`rootCA`).
   */
  async namespace(what: string, opts: { rootCA?: boolean } = {}): Promise<string> {
    const ns = this.uniqueName(what);
    await this.core.createNamespace({ body: { metadata: { name: ns } } });
    this.onCleanup(async () => {
      await this.core.deleteNamespace({ name: ns }).catch(() => {});
      // Its pods deleted at once, as a user deletes them (gracefully: their kubelet stops them):
      // the namespace controller gets to them ~5 s after the namespace, and a test kubelet's
      // cleanup (dispose, after this one when the kubelet is older) waits for its pods to go.
      // After the namespace: a Terminating namespace takes no new pods (a ReplicaSet's).
      await this.core.deleteCollectionNamespacedPod({ namespace: ns }).catch(() => {});
    });
    await waitFor(`ServiceAccount ${ns}/default`, async () => (await this.core.readNamespacedServiceAccount({ name: 'default', namespace: ns }).catch(() => undefined)) !== undefined, 20_000);
    if (opts.rootCA) {
      await waitFor(`ConfigMap ${ns}/kube-root-ca.crt`, async () => (await this.core.readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: ns }).catch(() => undefined)) !== undefined, 20_000);
    }
    return ns;
  }

  /** An in-process kubelet in API-server mode for `node` (its own kubeconfig unless given; `plugins` after cri-containerd), stopped after the test. */
  async kubelet(node: SuiteNode, opts: { kubeconfig?: string; testHooks?: Parameters<typeof startTestKubelet>[0]['testHooks']; config?: Parameters<typeof startTestKubelet>[0]['config']; plugins?: PluginEntry[] } = {}): Promise<TestKubelet> {
    const t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: this.env.containerdEndpoint }], ...(opts.plugins ?? [])],
      config: { kubeconfig: opts.kubeconfig ?? (await this.cp.nodeKubeconfig(node.name)), nodeName: node.name, nodeIP: '127.0.0.1', syncFrequencyMs: 10_000, nodeStatusUpdateFrequencyMs: 2000, ...opts.config },
      dir: node.dir,
      ...(opts.testHooks ? { testHooks: opts.testHooks } : {}),
    });
    this.onCleanup(() => t.dispose());
    return t;
  }

  /** Waits until the Node reports Ready. */
  async nodeReady(name: string, timeoutMs = 60_000): Promise<void> {
    await waitFor(`Node ${name} Ready`, async () => (await this.core.readNode({ name })).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'), timeoutMs);
  }

  /**
   * Waits for an event of `reason` about pod `name` whose message matches `message` (any message
   * when not given), and returns it. Not the first event of that reason: a kubelet retries a failed step and records each
   * failure, and an early one may say something else; a read of a PVC or Secret right after the
   * pod was bound is refused by the node authorizer until its graph has the pod ("no relationship
   * found between node ..."), for upstream's kubelet as for ours. On timeout the messages seen
   * are in the error.
   */
  async podEvent(ns: string, name: string, reason: string, message: RegExp = /(?:)/, timeoutMs = 60_000): Promise<CoreV1Event> {
    let seen: string[] = [];
    try {
      return await waitFor(`a ${reason} event of ${ns}/${name} matching ${message}`, async () => {
        const events = (await this.core.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.involvedObject?.kind === 'Pod' && e.involvedObject.name === name && e.reason === reason);
        seen = events.map((e) => e.message ?? '');
        return events.find((e) => message.test(e.message ?? ''));
      }, timeoutMs, 500);
    } catch (err) {
      throw new Error(`${(err as Error).message}; ${reason} messages seen: ${seen.length ? seen.map((m) => JSON.stringify(m)).join(', ') : 'none'}`);
    }
  }

  /** Mocha hooks, registered by clusterSuite(). */
  async setUp(ctx: Mocha.Context, dirPrefix: string): Promise<void> {
    this.env = await nodeEnvOrSkip(ctx);
    this.cp = await controlPlaneOrSkip(ctx);
    this.core = this.cp.admin.makeApiClient(CoreV1Api);
    this.coordination = this.cp.admin.makeApiClient(CoordinationV1Api);
    this.runtime = new CriRuntime(new CriClient(this.env.containerdEndpoint), { requestTimeoutMs: 10_000, pullTimeoutMs: 60_000 });
    this.dir = await fs.mkdtemp(path.join(os.tmpdir(), dirPrefix));
  }

  async cleanUpTest(): Promise<void> {
    for (const c of this.cleanups.splice(0).reverse()) {
      try {
        await c();
      } catch {
        // Best effort: one failed cleanup must not keep the others from running.
      }
    }
  }

  async tearDown(): Promise<void> {
    await this.cleanUpTest();
    await this.runtime?.close();
    if (this.dir) await fs.rm(this.dir, { recursive: true, force: true });
  }
}

/** Registers the shared set-up in the enclosing `describe` and returns the suite's handle. */
export function clusterSuite(dirPrefix: string): ClusterSuite {
  const suite = new ClusterSuite();
  before(async function () {
    this.timeout(300_000);
    await suite.setUp(this, dirPrefix);
  });
  afterEach(() => suite.cleanUpTest());
  after(() => suite.tearDown());
  return suite;
}
