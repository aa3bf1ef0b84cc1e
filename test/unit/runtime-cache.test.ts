import assert from 'node:assert/strict';
import { LABEL } from '../../core/runtime/labels.ts';
import { RuntimeCache } from '../../core/runtime/runtime-cache.ts';
import { Pleg } from '../../core/runtime/pleg.ts';
import { silentLogger } from '../../core/logger.ts';
import type { ContainerRuntime, SandboxStatus } from '../../core/runtime/types.ts';

/** A runtime holding one pod with one sandbox and nothing else, counting status calls. */
function oneSandboxRuntime() {
  const labels = { [LABEL.podUID]: 'uid-1', [LABEL.podName]: 'p', [LABEL.podNamespace]: 'ns', [LABEL.managed]: 'true' };
  const status: SandboxStatus = {
    id: 'sb-1', metadata: { name: 'p', namespace: 'ns', uid: 'uid-1', attempt: 0 }, state: 'SANDBOX_READY', createdAt: 1,
    labels, annotations: {}, ip: '10.0.0.5', additionalIps: [],
  };
  const calls = { podSandboxStatus: 0 };
  let present = true;
  const runtime = {
    listPodSandboxes: async () => (present ? [status] : []),
    listContainers: async () => [],
    podSandboxStatus: async () => {
      calls.podSandboxStatus++;
      return status;
    },
  } as unknown as ContainerRuntime;
  return { runtime, status, calls, setPresent: (v: boolean) => (present = v) };
}

describe('RuntimeCache', function () {
  it('asks the runtime for a sandbox status once while its state holds', async function () {
    const r = oneSandboxRuntime();
    const cache = new RuntimeCache(r.runtime);
    await cache.relist();
    await cache.relist();
    await cache.refreshPod('uid-1');
    assert.equal(r.calls.podSandboxStatus, 1);
    assert.equal(cache.get('uid-1')?.sandboxes[0]?.ip, '10.0.0.5');
  });

  it('uses a sandbox status the kubelet remembered instead of asking again', async function () {
    const r = oneSandboxRuntime();
    const cache = new RuntimeCache(r.runtime);
    cache.rememberSandboxStatus(r.status);
    const pod = await cache.refreshPod('uid-1');
    assert.equal(r.calls.podSandboxStatus, 0);
    assert.equal(pod?.sandboxes[0]?.ip, '10.0.0.5');
  });

  it('drops a remembered status once a node-wide relist no longer lists the sandbox', async function () {
    const r = oneSandboxRuntime();
    const cache = new RuntimeCache(r.runtime);
    cache.rememberSandboxStatus(r.status);
    r.setPresent(false);
    await cache.relist();
    assert.equal(cache.get('uid-1'), undefined);
    // Listed again: read anew, not served from the entry remembered before it went away.
    r.setPresent(true);
    await cache.relist();
    assert.equal(r.calls.podSandboxStatus, 1);
  });
});

describe('PLEG', function () {
  it('reports a change the pod sync\'s own re-read put in the cache before the relist (judged against what PLEG saw last)', async function () {
    const r = oneSandboxRuntime();
    const cache = new RuntimeCache(r.runtime);
    const seen: string[][] = [];
    const pleg = new Pleg({ cache, periodMs: 60_000, logger: silentLogger(), onChange: (uids) => seen.push([...uids]) });
    await pleg.start();
    pleg.stop();
    assert.deepEqual(seen, [['uid-1']], 'the first look reports the pod');
    await pleg.relist();
    assert.equal(seen.length, 1, 'nothing changed, nothing reported');
    // The sandbox dies; a pod sync re-reads the pod (refreshPod) before PLEG's next relist.
    r.status.state = 'SANDBOX_NOTREADY';
    await cache.refreshPod('uid-1');
    await pleg.relist();
    assert.deepEqual(seen[1], ['uid-1'], 'the relist still reports the pod whose sandbox changed');
    r.setPresent(false);
    await pleg.relist();
    assert.deepEqual(seen[2], ['uid-1'], 'and a pod that is gone');
  });
});
