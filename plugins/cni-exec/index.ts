import type { V1Pod } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import type { Server } from 'node:net';
import path from 'node:path';
import { definePlugin, errorMessage, networkHooksView, STAGE } from 'kubelet-ts';
import { CniRuntime } from './cni/runtime.ts';
import { detectShim, installDelegate, isDelegateConf } from './delegate/install.ts';
import { serveDelegate } from './delegate/protocol.ts';
import { CniNetwork, type CniNetworkService } from './network-service.ts';
import { optionsSchema, type CniExecOptions } from './options-schema.ts';
import { podDnsConfig, podHostnameAndDomain } from './pod/dns.ts';
import { managedHostsFile, nodeHostsFile } from './pod/hosts.ts';

export type { CniNetworkService, CniNetworkSetUpEvent, CniNetworkTearDownEvent, CniPodNetwork } from './network-service.ts';
export type { CniResult } from './cni/types.ts';

/**
 * cni-exec: the kubelet owns pod networking. A CNI runtime in TypeScript runs the
 * configured plugin chain (confDir, binDirs); the container runtime reaches it through a
 * delegate: a one-plugin network config in the runtime's CNI dir whose plugin is a small
 * shim that forwards each CNI request to this plugin over a unix socket. It also sets each
 * sandbox's DNS config and host name (`beforeSandbox`) and gives containers the managed
 * /etc/hosts with `hostAliases` (`beforeContainerCreate`).
 */
export default definePlugin<CniExecOptions>({
  name: 'cni-exec',
  kind: 'network',
  optionsSchema,
  async apply(ctx, options) {
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

    const dnsSettings = async () => ({
      clusterDNS: options.clusterDNS,
      clusterDomain: options.clusterDomain,
      hostResolvConf: options.resolvConf === '' ? undefined : await fs.readFile(options.resolvConf, 'utf8'),
    });

    // DNS and host name of the sandbox, as upstream's GetPodDNS and GeneratePodHostNameAndDomain.
    ctx.hooks.beforeSandbox.tapPromise('cni-exec', async (config, pod) => {
      network.sandboxPending(pod);
      const { config: dnsConfig, warnings } = podDnsConfig(pod, await dnsSettings());
      for (const w of warnings) log.warn({ pod: podName(pod) }, `DNSConfigForming: ${w}`);
      let hostname = config.hostname;
      if (!pod.spec?.hostNetwork) {
        const hd = podHostnameAndDomain(pod, options.clusterDomain);
        hostname = hd.hostname;
        if (pod.spec?.setHostnameAsFQDN && hd.domain) {
          const fqdn = `${hd.hostname}.${hd.domain}`;
          if (fqdn.length > 64) throw new Error(`failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, ${fqdn.length} characters requested)`);
          hostname = fqdn;
        }
      }
      return { ...config, hostname, dnsConfig };
    });

    // The managed /etc/hosts (pod IPs, host name, hostAliases), one file per pod, mounted into each container.
    ctx.hooks.beforeContainerCreate.tapPromise('cni-exec', async (config, c) => {
      if (config.mounts.some((m) => m.containerPath === '/etc/hosts')) return config;
      const pod = c.pod;
      let content: string;
      if (pod.spec?.hostNetwork) {
        content = nodeHostsFile(await fs.readFile(options.hostsFile, 'utf8'), pod.spec.hostAliases);
      } else {
        let ips = (await network.attachment(c.sandboxId))?.ips ?? [];
        if (!ips.length) {
          const st = await ctx.runtime().podSandboxStatus(c.sandboxId);
          ips = [st.ip, ...st.additionalIps].filter(Boolean);
        }
        // Upstream mounts no managed hosts file while the pod has no IP.
        if (!ips.length) return config;
        const { hostname, domain } = podHostnameAndDomain(pod, options.clusterDomain);
        content = managedHostsFile(ips, hostname, domain, pod.spec?.hostAliases);
      }
      const file = hostsPath(ctx.stateDir, pod);
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, content, { mode: 0o644 });
      return { ...config, mounts: [...config.mounts, { containerPath: '/etc/hosts', hostPath: file, readonly: false }] };
    });

    ctx.hooks.podRemoved.tapPromise('cni-exec', async (pod) => {
      network.podRemoved(pod);
      await fs.rm(path.dirname(hostsPath(ctx.stateDir, pod)), { recursive: true, force: true });
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

function podName(pod: V1Pod): string {
  return `${pod.metadata?.namespace}/${pod.metadata?.name}`;
}

function hostsPath(stateDir: string, pod: V1Pod): string {
  return path.join(stateDir, 'pods', pod.metadata!.uid!, 'etc-hosts');
}

/** The service as other plugins get it: hooks with tap methods only. */
function serviceView(n: CniNetwork): CniNetworkService {
  return Object.freeze({
    hooks: networkHooksView(n.hooks),
    cni: n.cni,
    attachment: (sandboxId: string, ifName?: string) => n.attachment(sandboxId, ifName),
    check: (sandboxId: string, ifName?: string) => n.check(sandboxId, ifName),
  });
}
