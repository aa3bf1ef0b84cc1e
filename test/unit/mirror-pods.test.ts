import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { MirrorPods } from '../../core/apiserver/mirror-pods.ts';
import { silentLogger } from '../../core/logger.ts';
import { CONFIG_HASH_ANNOTATION, CONFIG_MIRROR_ANNOTATION } from '../../core/objects/pod-origin.ts';

/** A static pod as the file source makes it: its hash in config.hash. */
const staticPod = (name: string, hash: string): V1Pod => ({
  metadata: { name, namespace: 'default', uid: hash, annotations: { [CONFIG_HASH_ANNOTATION]: hash } },
  spec: { containers: [{ name: 'c', image: 'i' }] },
});

describe('mirror pods', function () {
  it('makes the mirror of a static pod read before the Node registered, once it is, with no other event', async function () {
    const created: V1Pod[] = [];
    let nodeUid: string | undefined;
    const mirrors = new MirrorPods({
      api: {
        createPod: async (p) => {
          created.push(p);
          return { ...p, metadata: { ...p.metadata, uid: `mirror-${created.length}` } };
        },
        deletePod: async () => {},
      },
      nodeName: 'n1',
      nodeUid: () => nodeUid,
      logger: silentLogger(),
      classify: () => 'retry',
    });
    try {
      mirrors.setStatic([staticPod('web-n1', 'h1')]);
      await sleep(100);
      assert.equal(created.length, 0, 'no mirror before the Node (its owner) exists');
      nodeUid = 'node-uid';
      for (let i = 0; i < 40 && created.length === 0; i++) await sleep(50);
      assert.equal(created.length, 1, 'the mirror is made once the Node is registered');
      const m = created[0]!;
      assert.equal(m.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION], 'h1');
      assert.deepEqual(m.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['Node', 'n1', 'node-uid']]);
      assert.equal(mirrors.mirrorOf(staticPod('web-n1', 'h1'))?.uid, 'mirror-1');
    } finally {
      mirrors.stop();
    }
  });
});
