import fs from 'node:fs/promises';
import type { Server } from 'node:net';
import path from 'node:path';
import { definePlugin, errorMessage, networkHooksView, STAGE } from 'kubelet-ts';
import { CniRuntime } from './cni/runtime.ts';
import { detectShim, installDelegate, isDelegateConf } from './delegate/install.ts';
import { serveDelegate } from './delegate/protocol.ts';
import { CniNetwork, type CniNetworkService } from './network-service.ts';
import { optionsSchema, type CniExecOptions } from './options-schema.ts';

export type { CniNetworkService, CniNetworkSetUpEvent, CniNetworkTearDownEvent, CniPodNetwork } from './network-service.ts';
export type { CniResult } from './cni/types.ts';

/**
 * cni-exec: the kubelet owns pod networking. A CNI runtime in TypeScript runs the
 * configured plugin chain (confDir, binDirs); the container runtime reaches it through a
 * delegate: a one-plugin network config in the runtime's CNI dir whose plugin is a small
 * shim that forwards each CNI request to this plugin over a unix socket. Pod DNS and the
 * managed /etc/hosts are the core's (they are the same whoever owns the network).
 */
/** Options of earlier versions that the kubelet's config now holds. */
const MOVED_TO_KUBELET_CONFIG = ['clusterDNS', 'clusterDomain', 'resolvConf', 'hostsFile'] as const;

export default definePlugin<CniExecOptions>({
  name: 'cni-exec',
  kind: 'network',
  optionsSchema,
  async apply(ctx, options) {
    const moved = MOVED_TO_KUBELET_CONFIG.filter((o) => (options as unknown as Record<string, unknown>)[o] !== undefined);
    if (moved.length) {
      throw new Error(`option${moved.length > 1 ? 's' : ''} ${moved.join(', ')} moved to the kubelet's own config: pod DNS and /etc/hosts are the core's for every network owner (set clusterDNS, clusterDomain and resolvConf there, as in upstream's KubeletConfiguration)`);
    }
    const log = ctx.logger;
    const cni = new CniRuntime({
      confDir: options.confDir,
      binDirs: options.binDirs,
      cacheDir: options.cacheDir ?? path.join(ctx.stateDir, 'results'),
      execTimeoutMs: options.execTimeoutSeconds * 1000,
      ...(options.networkName !== undefined ? { networkName: options.networkName } : {}),
      skipConf: (_file, text) => isDelegateConf(text, options.shimType),
      logger: log,
    });
    const network = new CniNetwork(cni, { pods: () => ctx.pods(), logger: log, isolateHooks: (hooks) => ctx.isolateHooks(hooks) });
    ctx.provide('network', serviceView(network));

    let server: Server | undefined;
    // The start phase: the delegate's socket, and the runtime's CNI config and shim (apply touches nothing).
    if (options.delegate) ctx.onStart(async () => {
      server = await serveDelegate(options.socketPath, (req) => network.handle(req), (err) => log.warn({ err: err.message }, 'delegate request failed'));
      ctx.onClose(async () => {
        await new Promise<void>((resolve) => server!.close(() => resolve()));
        await fs.rm(options.socketPath, { force: true });
      });
      const shim = options.shim === 'auto' ? detectShim() : options.shim;
      const t0 = performance.now();
      const installed = await installDelegate({
        runtimeConfDir: options.runtimeConfDir,
        runtimeBinDir: options.runtimeBinDir,
        confFile: options.runtimeConfFile,
        shim,
        conf: { name: options.runtimeNetworkName, type: options.shimType, socket: options.socketPath, timeoutSeconds: options.shimTimeoutSeconds },
      });
      log.info({ ...installed, shim, socket: options.socketPath, confDir: options.confDir, ms: Math.round(performance.now() - t0) }, 'CNI delegate installed');
      // Say now, not at the first pod, when the chain's config is unusable.
      await cni.loadNetwork().then(
        (net) => log.info({ network: net.name, file: net.file, plugins: net.plugins.map((p) => p.type) }, 'CNI network'),
        (err) => log.warn({ err: errorMessage(err) }, 'no usable CNI network yet: pods will fail to start until there is one'),
      );
    });

    // The sandbox is about to be created: its CNI request will come through the delegate.
    ctx.hooks.beforeSandbox.tapPromise('cni-exec', async (config, pod) => {
      network.sandboxPending(pod);
      return config;
    });

    ctx.hooks.podRemoved.tapPromise('cni-exec', async (pod) => {
      network.podRemoved(pod);
    });

    // Garbage collection: cached attachments of sandboxes the runtime no longer has.
    let gcTimer: NodeJS.Timeout | undefined;
    const gc = async () => {
      try {
        const ids = new Set((await ctx.runtime().listPodSandboxes()).map((s) => s.id));
        const { removed } = await cni.gc((id) => ids.has(id), Math.max(ctx.config.runtimeRequestTimeoutMs, 60_000));
        if (removed.length) log.info({ removed }, 'tore down CNI attachments of sandboxes the runtime no longer has');
      } catch (err) {
        log.warn({ err: errorMessage(err) }, 'CNI garbage collection failed');
      }
    };
    ctx.hooks.started.tapPromise({ name: 'cni-exec', stage: STAGE.OBSERVE }, async () => {
      void gc();
      gcTimer = setInterval(() => void gc(), options.gcIntervalSeconds * 1000);
      gcTimer.unref();
    });
    ctx.onClose(() => clearInterval(gcTimer));
  },
});

/** The service as other plugins get it: hooks with tap methods only. */
function serviceView(n: CniNetwork): CniNetworkService {
  return Object.freeze({
    hooks: networkHooksView(n.hooks),
    cni: n.cni,
    attachment: (sandboxId: string, ifName?: string) => n.attachment(sandboxId, ifName),
    check: (sandboxId: string, ifName?: string) => n.check(sandboxId, ifName),
  });
}
