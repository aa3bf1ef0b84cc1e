import fs from 'node:fs/promises';
import type { KubeletConfig } from '../config/types.ts';
import { errorMessage } from '../errors.ts';
import { Kubelet } from '../kubelet.ts';
import type { Logger } from '../logger.ts';
import type { ApiTransport } from '../apiserver/api-transport.ts';
import { Limiter } from '../util/limiter.ts';
import { hollowNodeConfig, hollowNodeName } from './hollow-node-config.ts';
import { sharedMachineInfo, type HollowCapacity } from './hollow-machine.ts';
import type { LoadedKubeconfig } from '../apiserver/kubeconfig.ts';
import { credentialsOf } from '../apiserver/credentials.ts';

/** Nodes starting at once: each start is quick (registration goes on in the background), so this bounds a burst, not the total. */
const START_PARALLELISM = 16;

export interface HollowFleetOptions {
  /** What every node's config takes (file and flags). */
  base: KubeletConfig;
  nodes: number;
  prefix: string;
  /** Each node's state goes to `<rootDir>/<node>`. */
  rootDir: string;
  /** `node`: each node acts as system:node:<name> through impersonation; `kubeconfig`: as the kubeconfig's identity. */
  identity: 'node' | 'kubeconfig';
  /** The process's shared connection pool to the API server. */
  transport: ApiTransport;
  /** The kubeconfig, loaded once for every node. */
  kubeconfig: LoadedKubeconfig;
  /** What each node reports of its machine instead of the host's (`--capacity`). */
  capacity?: HollowCapacity;
  logger: Logger;
}

/**
 * The nodes of `kubelet-ts hollow`: N kubelets of one process, each the composition root
 * (core/kubelet.ts) with its own config, state, identity and rate limiters, and with what a
 * hollow node does not run off (its ports, node pressure on the host's disks, host mounts).
 * What they share: the API transport (one HTTP/2 connection pool), the loaded kubeconfig and its
 * credentials (its files read once for all nodes),
 * one read of the machine (hollow-machine.ts), the process's timers
 * (Node keeps timers of equal duration in one list under one libuv timer: N nodes' 1 s PLEG
 * relists are one timer, not N) and the loaded code.
 */
export class HollowFleet {
  readonly kubelets: Kubelet[] = [];
  private stopped = false;

  constructor(private readonly options: HollowFleetOptions) {}

  /** The node names, in index order. */
  names(): string[] {
    return Array.from({ length: this.options.nodes }, (_, i) => hollowNodeName(this.options.prefix, i));
  }

  /** Starts every node (a few at a time). A node that cannot start fails the whole start: the nodes started so far are stopped. */
  async start(): Promise<void> {
    const { base, rootDir, identity, transport, kubeconfig, logger } = this.options;
    await fs.mkdir(rootDir, { recursive: true });
    const machineInfo = sharedMachineInfo(rootDir, this.options.capacity);
    const credentials = credentialsOf(kubeconfig);
    const limiter = new Limiter(START_PARALLELISM);
    const starts = this.names().map((name, index) => limiter.run(async () => {
      if (this.stopped) return;
      const config = hollowNodeConfig(base, index, name, rootDir);
      const kubelet = new Kubelet(config, logger.child({ node: name }), [], {}, {
        servers: false,
        nodePressure: false,
        hostMounts: false,
        api: { transport, kubeconfig, credentials, ...(identity === 'node' ? { impersonate: { user: `system:node:${name}`, groups: ['system:nodes'] } } : {}) },
        machineInfo,
      });
      this.kubelets.push(kubelet);
      try {
        await kubelet.start();
      } catch (err) {
        throw new Error(`hollow node ${name}: ${errorMessage(err)}`, { cause: err });
      }
    }));
    const results = await Promise.allSettled(starts);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await this.stop();
      throw failed.reason;
    }
  }

  /** Stops every node (each bounded by the kubelet's own stop); pods and API objects stay as they are. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.kubelets.map((k) => k.stop().catch((err) => this.options.logger.warn({ node: k.config.nodeName, err: errorMessage(err) }, 'stopping a hollow node failed'))));
  }
}
