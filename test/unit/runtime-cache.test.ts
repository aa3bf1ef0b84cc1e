import assert from 'node:assert/strict';
import { LABEL } from '../../core/runtime/labels.ts';
import { RuntimeCache } from '../../core/runtime/runtime-cache.ts';
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
