import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { silentLogger } from '../../core/logger.ts';
import { UserNamespaces } from '../../core/pod/user-namespaces.ts';
import { validatePod } from '../../core/objects/validation/pod-validation.ts';
import { loadObjectModels } from '../../core/objects/object-decoder.ts';
import { fakeCriSuite } from '../support/fake-cri-suite.ts';
import { podManifest } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

const IMAGE = 'busybox:1.36';
const pod = (uid: string): V1Pod => ({ metadata: { name: uid, namespace: 'ns', uid }, spec: { hostUsers: false, containers: [{ name: 'a', image: IMAGE }] } as V1Pod['spec'] });

describe('user namespaces (hostUsers: false)', function () {
  this.timeout(20_000);

  it('gives each pod its own block of 65536 host IDs, kept across a restart and freed with the pod', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-userns-'));
    try {
      const userns = new UserNamespaces({ rootDir: dir, logger: silentLogger() });
      await userns.start();
      const a = await userns.forPod(pod('a'));
      const b = await userns.forPod(pod('b'));
      assert.deepEqual(a, { mode: 'POD', uids: [{ hostId: 131_072, containerId: 0, length: 65_536 }], gids: [{ hostId: 131_072, containerId: 0, length: 65_536 }] }, 'blocks 0 (the host) and 1 are never given');
      assert.equal(b.uids[0]!.hostId, 196_608);
      assert.deepEqual(await userns.forPod(pod('a')), a, 'the same pod, the same block');
      // Upstream's file, before the sandbox exists.
      assert.deepEqual(JSON.parse(await fs.readFile(path.join(dir, 'pods', 'a', 'userns'), 'utf8')), { uidMappings: a.uids, gidMappings: a.gids });

      // A restarted kubelet: pod b keeps its block, a new pod does not get it.
      const again = new UserNamespaces({ rootDir: dir, logger: silentLogger() });
      await again.start();
      assert.deepEqual(await again.forPod(pod('b')), b);
      again.release('a');
      await fs.rm(path.join(dir, 'pods', 'a'), { recursive: true });
      assert.equal((await again.forPod(pod('c'))).uids[0]!.hostId, 131_072, 'a\'s block, freed, goes to the next pod');
      assert.equal((await again.forPod(pod('d'))).uids[0]!.hostId, 262_144, 'b\'s block stays b\'s');

      // A file this kubelet would not have written (the host's IDs) is not taken over.
      await fs.mkdir(path.join(dir, 'pods', 'evil'), { recursive: true });
      await fs.writeFile(path.join(dir, 'pods', 'evil', 'userns'), JSON.stringify({ uidMappings: [{ hostId: 0, containerId: 0, length: 65536 }], gidMappings: [{ hostId: 0, containerId: 0, length: 65536 }] }));
      const third = new UserNamespaces({ rootDir: dir, logger: silentLogger() });
      await third.start();
      assert.notEqual((await third.forPod(pod('evil'))).uids[0]!.hostId, 0);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a static pod that asks for a user namespace and shares the host\'s namespaces, as the API server does', async () => {
    await loadObjectModels();
    const errors = validatePod({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { hostUsers: false, hostNetwork: true, hostPID: true, containers: [{ name: 'a', image: IMAGE }] } });
    assert.deepEqual(errors.filter((e) => /HostUsers/.test(e)), [
      'spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false',
      'spec.hostPID: Forbidden: when `pod.Spec.HostUsers` is false',
    ]);
  });

  describe('on the fake CRI', function () {
    const suite = fakeCriSuite({ prefix: 'kts-userns-cri-', images: [IMAGE] });

    it('the sandbox and every container get the pod\'s user namespace when the runtime handler supports it', async () => {
      suite.fake.setRuntimeHandlers([{ name: '', features: { userNamespaces: true } }]);
      const t = await suite.start();
      await t.writeManifest('u.json', podManifest('u', [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }], { hostUsers: false }));
      const sb = await waitFor('the sandbox', () => suite.fake.sandboxes().find((s) => s.config.metadata.name.startsWith('u-')), 8000);
      const userns = sb.config.linux.securityContext.namespaceOptions.usernsOptions;
      assert.equal(userns.mode, 'POD');
      assert.deepEqual(userns.uids, [{ hostId: 131_072, containerId: 0, length: 65_536 }]);
      const c = await waitFor('the container', () => suite.fake.containers().find((x) => x.podSandboxId === sb.id), 8000);
      assert.deepEqual(c.config.linux.securityContext.namespaceOptions.usernsOptions, userns, 'the container joins the sandbox\'s user namespace');
    });

    it('a runtime that cannot do user namespaces gets no sandbox: the pod waits with upstream\'s reason, never on the host\'s IDs', async () => {
      const t = await suite.start();
      await t.writeManifest('u.json', podManifest('u', [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }], { hostUsers: false }));
      const waiting = await t.waitForPod('u', (p) => /does not support user namespaces/.test(p?.status?.containerStatuses?.[0]?.state?.waiting?.message ?? ''), 8000, 'waiting for user namespaces');
      assert.match(waiting!.status!.containerStatuses![0]!.state!.waiting!.message!, /^Failed to create pod sandbox: RuntimeClass handler "" does not support user namespaces/);
      assert.equal(suite.fake.sandboxes().length, 0);
    });
  });
});
