import type { PluginEntry } from '../../core/config/types.ts';
import type { KubeletConfig } from '../../core/config/types.ts';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from './node-env.ts';
import { startTestKubelet, type TestKubelet } from './test-kubelet.ts';

/** What a suite on containerd works with, once its `before` hook ran. */
export interface ContainerdSuite {
  /** The run's shared registry and containerd. */
  readonly env: NodeEnv;
  /** The suite's kubelet (in process), on that containerd. */
  readonly t: TestKubelet;
  /** A CRI client of the suite's own, to check the runtime directly. */
  readonly cri: CriRuntime;
}

/**
 * Registers, in the calling `describe`, the hooks most integration suites open with: the
 * shared node environment (skipped, or failed under CI=true, when it cannot run), a CRI client
 * for direct checks, and a test kubelet with cri-containerd (plus `extraPlugins`) and `config`;
 * `after` removes every pod the kubelet still runs, stops it and closes the client.
 */
export function containerdSuite(options: {
  config?: Partial<KubeletConfig> | (() => Promise<Partial<KubeletConfig>>);
  extraPlugins?: PluginEntry[];
} = {}): ContainerdSuite {
  let env: NodeEnv | undefined;
  let t: TestKubelet | undefined;
  let cri: CriRuntime | undefined;
  before(async function () {
    env = await nodeEnvOrSkip(this);
    cri = new CriRuntime(new CriClient(env.containerdEndpoint), { requestTimeoutMs: 10_000, pullTimeoutMs: 60_000 });
    const config = typeof options.config === 'function' ? await options.config() : (options.config ?? {});
    t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ...(options.extraPlugins ?? [])], config });
  });
  after(async function () {
    await t?.dispose();
    await cri?.close();
  });
  const ready = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`containerdSuite: ${what} is used before the suite's before hook ran`);
    return v;
  };
  return {
    get env() { return ready(env, 'env'); },
    get t() { return ready(t, 't'); },
    get cri() { return ready(cri, 'cri'); },
  };
}
