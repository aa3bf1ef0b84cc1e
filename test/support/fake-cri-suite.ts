import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { KubeletConfig, PluginEntry } from '../../core/config/types.ts';
import { FakeCriServer } from '../fakes/fake-cri-server.ts';
import { startTestKubelet, type TestKubelet } from './test-kubelet.ts';
import type { Logger } from '../../core/logger.ts';

/** What a unit suite on the fake CRI works with, in each test. */
export interface FakeCriSuite {
  /** The test's own temporary directory (the fake's socket, the kubelet's root). */
  readonly dir: string;
  /** The test's fake CRI server. */
  readonly fake: FakeCriServer;
  /** Starts a kubelet on the fake (cri-containerd on its socket, plus `extraPlugins`; logging to `logger` if given); stopped after the test. */
  start(config?: Partial<KubeletConfig>, extraPlugins?: PluginEntry[], options?: { logger?: Logger }): Promise<TestKubelet>;
  /** Stops a kubelet before the test ends (a restart); the suite no longer stops it. */
  stop(t: { stop(): Promise<void> }): Promise<void>;
  /** A kubelet the test built itself, stopped after the test like those of `start()`. */
  track(k: { stop(): Promise<void> }): void;
}

/**
 * Registers, in the calling `describe`, the hooks of a unit suite that runs real Kubelets on
 * the fake CRI server: per test a temp dir `<prefix>*`, a fake serving `images`, and kubelets
 * started with `start()`; after the test, kubelets stop (newest first; pods on a fake leave
 * nothing on the node), then the fake, then the dir goes.
 */
export function fakeCriSuite(options: { prefix: string; images: string[] }): FakeCriSuite {
  let dir: string | undefined;
  let fake: FakeCriServer | undefined;
  let kubelets: Array<{ stop(): Promise<void> }> = [];
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), options.prefix));
    fake = await FakeCriServer.start(path.join(dir, 'cri.sock'));
    for (const image of options.images) fake.addImage(image);
    kubelets = [];
  });
  afterEach(async () => {
    // A test may leave delays on the fake; a stop must not wait for them.
    fake?.clearDelays();
    for (const t of kubelets.splice(0).reverse()) await t.stop();
    await fake?.stop();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
    fake = undefined;
    dir = undefined;
  });
  const ready = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`fakeCriSuite: ${what} is used outside a test`);
    return v;
  };
  return {
    get dir() { return ready(dir, 'dir'); },
    get fake() { return ready(fake, 'fake'); },
    async start(config = {}, extraPlugins = [], options = {}) {
      const t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: ready(fake, 'fake').endpoint }], ...extraPlugins], config, dir: path.join(ready(dir, 'dir'), 'kubelet'), ...options });
      kubelets.push(t);
      return t;
    },
    async stop(t) {
      kubelets = kubelets.filter((k) => k !== t);
      await t.stop();
    },
    track(k) {
      kubelets.push(k);
    },
  };
}
