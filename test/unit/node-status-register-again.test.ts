import assert from 'node:assert/strict';
import type { V1Node } from '@kubernetes/client-node';
import type { ApiClient } from '../../core/apiserver/api-client.ts';
import { ApiError } from '../../core/apiserver/api-errors.ts';
import type { RequestInfo } from '../../core/apiserver/request-info.ts';
import { createHooks } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import type { MachineInfo } from '../../core/node/machine-info.ts';
import { NodeStatusManager, type NodeStatusInputs } from '../../core/node/node-status.ts';

const MACHINE: MachineInfo = {
  numCores: 2, memoryCapacityBytes: 4n << 30n, rootfsCapacityBytes: 20n << 30n, hugePages: [],
  machineID: 'm', systemUUID: 's', bootID: 'b', kernelVersion: '6.1.0-test', osImage: 'Debian GNU/Linux 12 (bookworm)',
};

const inputs: NodeStatusInputs = {
  runtimeVersion: async () => ({ runtimeName: 'containerd', runtimeVersion: '2.1.1' }),
  runtimeStatus: async () => ({ conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, { type: 'NetworkReady', status: true, reason: '', message: '' }] }),
  plegHealthy: () => true,
  images: async () => [],
};

function apiError(method: string, path: string, statusCode: number, reason: string): ApiError {
  const request = { method, path, verb: method.toLowerCase(), group: '', resource: 'nodes' } as RequestInfo;
  return new ApiError({ code: statusCode === 404 ? 'NotFound' : 'AlreadyExists', failure: 'status', message: `${reason} (fake)`, request, statusCode, reason });
}

/** One Node in memory, served as the API server would; POSTs wait for `releasePosts` once held. */
class FakeNodeApi {
  node: V1Node | undefined;
  posts = 0;
  private uid = 0;
  private held: Array<() => void> | undefined;

  holdPosts(): void {
    this.held = [];
  }
  releasePosts(): void {
    for (const go of this.held?.splice(0) ?? []) go();
    this.held = undefined;
  }

  readonly client = {
    request: async (method: string, path: string, opts?: { body?: unknown }): Promise<unknown> => {
      if (method === 'POST') {
        this.posts++;
        if (this.held) await new Promise<void>((go) => this.held!.push(go));
        if (this.node) throw apiError(method, path, 409, 'AlreadyExists');
        const body = opts!.body as V1Node;
        this.node = { ...body, metadata: { ...body.metadata, uid: `uid-${++this.uid}`, resourceVersion: String(this.uid) } };
        return this.node;
      }
      if (!this.node) throw apiError(method, path, 404, 'NotFound');
      if (method === 'PATCH') return this.node;
      return this.node;
    },
  } as unknown as ApiClient;
}

describe('node status: registering again after the Node was deleted', () => {
  it('registers once when two syncs in a row find the Node gone (one registration, one re-list)', async () => {
    const api = new FakeNodeApi();
    let again = 0;
    const m = new NodeStatusManager({
      client: api.client, hooks: createHooks(), inputs, logger: silentLogger(), nodeName: 'n1', nodeIP: '127.0.0.1', port: 10250,
      rootDir: '/var/lib/kubelet', maxPods: 110, nodeLabels: {}, registerWithTaints: [], systemReserved: {}, kubeReserved: {}, evictionHard: {},
      updateFrequencyMs: 60_000, reportFrequencyMs: 0, readinessPollMs: 0, machineInfo: async () => MACHINE, watchNode: false,
      onRegisteredAgain: () => again++,
    });
    try {
      m.start();
      assert.equal((await m.register())?.metadata?.uid, 'uid-1');
      await m.updateNow();

      // Deleted by an admin; the new registration's POST is slow to answer.
      api.node = undefined;
      api.holdPosts();
      const first = m.updateNow();
      const second = m.updateNow(); // a second request while the first sync runs: the sync runs again
      await Promise.all([first, second]);
      api.releasePosts();
      const node = await m.register();
      await m.updateNow();

      assert.equal(node?.metadata?.uid, 'uid-2');
      assert.equal(api.posts, 2, 'one registration, then one registration again');
      assert.equal(again, 1, 'the pod source is told once');
    } finally {
      await m.stop();
    }
  });
});
