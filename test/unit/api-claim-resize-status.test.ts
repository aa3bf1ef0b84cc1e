import assert from 'node:assert/strict';
import { ApiClaimResizeStatus } from '../../core/apiserver/api-claim-resize-status.ts';
import type { ApiClient } from '../../core/apiserver/api-client.ts';

describe('a finished node expansion written to the claim\'s status', function () {
  it('merge-patches the status subresource: the new capacity, the resize conditions gone, others kept, at the resourceVersion read', async function () {
    const sent: unknown[] = [];
    const client = { request: async (...args: unknown[]) => sent.push(args) } as unknown as ApiClient;
    await new ApiClaimResizeStatus(() => client).markResizeFinished({
      metadata: { name: 'data', namespace: 'ns', resourceVersion: '42' },
      status: {
        capacity: { storage: '16Mi' },
        conditions: [{ type: 'Resizing', status: 'True' }, { type: 'FileSystemResizePending', status: 'True' }, { type: 'ModifyingVolume', status: 'True' }],
      },
    }, '32Mi');
    assert.deepEqual(sent, [['PATCH', '/api/v1/namespaces/ns/persistentvolumeclaims/data/status', {
      body: { metadata: { resourceVersion: '42' }, status: { capacity: { storage: '32Mi' }, conditions: [{ type: 'ModifyingVolume', status: 'True' }] } },
      contentType: 'application/merge-patch+json',
    }]]);
  });

  it('removes the conditions field when only resize conditions were there', async function () {
    const sent: Array<[string, string, { body: { status: { conditions: unknown } } }]> = [];
    const client = { request: async (...args: unknown[]) => sent.push(args as (typeof sent)[0]) } as unknown as ApiClient;
    await new ApiClaimResizeStatus(() => client).markResizeFinished({ metadata: { name: 'data', namespace: 'ns' }, status: { conditions: [{ type: 'FileSystemResizePending', status: 'True' }] } }, '1Gi');
    assert.equal(sent[0]![2].body.status.conditions, null);
  });

  it('names the missing API server', async function () {
    await assert.rejects(new ApiClaimResizeStatus(() => undefined).markResizeFinished({ metadata: { name: 'data' } }, '1Gi'), /no API server: a claim's status needs one/);
  });
});
