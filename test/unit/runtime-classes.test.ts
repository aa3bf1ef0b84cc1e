import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import type { ApiClient } from '../../core/apiserver/api-client.ts';
import { RuntimeClasses } from '../../core/apiserver/runtime-classes.ts';
import { KubeletError } from '../../core/errors.ts';

const pod = (runtimeClassName?: string): V1Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers: [], ...(runtimeClassName ? { runtimeClassName } : {}) } });

/** A client whose GETs answer from `objects` (or throw what `fail` says); counts the calls. */
function stubClient(objects: Record<string, unknown>, fail?: () => Error): { client: ApiClient; calls: string[] } {
  const calls: string[] = [];
  const client = {
    async request(method: string, path: string) {
      calls.push(`${method} ${path}`);
      const err = fail?.();
      if (err) throw err;
      const name = decodeURIComponent(path.split('/').pop()!);
      if (!(name in objects)) throw new KubeletError('NotFound', `runtimeclasses.node.k8s.io "${name}" not found`);
      return objects[name];
    },
  } as unknown as ApiClient;
  return { client, calls };
}

describe('RuntimeClasses (runtimeClassName → handler)', () => {
  it('no class: the runtime default handler, nothing asked', async () => {
    const { client, calls } = stubClient({});
    assert.equal(await new RuntimeClasses({ client: () => client, handlers: {} }).handler(pod()), '');
    assert.deepEqual(calls, []);
  });

  it('standalone: the config map, or a clear error', async () => {
    const rc = new RuntimeClasses({ client: () => undefined, handlers: { gvisor: 'runsc' } });
    assert.equal(await rc.handler(pod('gvisor')), 'runsc');
    await assert.rejects(rc.handler(pod('kata')), /runtimeclass.node.k8s.io "kata" not found: without an API server, RuntimeClasses come from runtimeClassHandlers/);
    await assert.rejects(rc.handler(pod('toString')), /not found/, 'only the map\'s own keys');
  });

  it('API mode: the RuntimeClass object\'s handler, read from node.k8s.io/v1; NotFound as the server words it', async () => {
    const { client, calls } = stubClient({ fast: { handler: 'runc' }, bad: { handler: 'Not/A Label' } });
    const rc = new RuntimeClasses({ client: () => client, handlers: { fast: 'ignored' } });
    assert.equal(await rc.handler(pod('fast')), 'runc');
    assert.equal(await rc.handler(pod('fast')), 'runc');
    assert.deepEqual(calls, ['GET /apis/node.k8s.io/v1/runtimeclasses/fast'], 'read once while fresh');
    await assert.rejects(rc.handler(pod('gone')), { message: 'runtimeclasses.node.k8s.io "gone" not found' });
    await assert.rejects(rc.handler(pod('bad')), /RuntimeClass bad has an invalid handler "Not\/A Label"/);
  });

  it('the API server away: a known handler still serves, an unknown class fails with the cause', async () => {
    let down = false;
    const { client } = stubClient({ fast: { handler: 'runc' } }, () => (down ? new KubeletError('Unavailable', 'cannot reach the API server') : (undefined as unknown as Error)));
    const rc = new RuntimeClasses({ client: () => client, handlers: {} });
    assert.equal(await rc.handler(pod('fast')), 'runc');
    down = true;
    (rc as unknown as { known: Map<string, { handler: string; at: number }> }).known.get('fast')!.at = 0; // stale
    assert.equal(await rc.handler(pod('fast')), 'runc');
    await assert.rejects(rc.handler(pod('other')), /failed to lookup RuntimeClass other: cannot reach the API server/);
  });
});
