import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { definePlugin } from '../../core/plugins/plugin-api.ts';
import { STAGE } from '../../core/hooks.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { KUBELET_BIN, startKubeletProcess } from '../support/kubelet-process.ts';
import { isRunning, podManifest, startTestKubelet } from '../support/test-kubelet.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { privateRegistryUsableOrSkip, startPrivateRegistry, type PrivateRegistry } from '../support/private-registry.ts';
import { providerResponse, writeFakeProvider } from '../support/fake-credential-provider.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Image credential providers on real containerd, against a real password-protected registry
 * (docker-registry with htpasswd): pods pull from it with no pull secret, through an exec
 * provider (upstream's CredentialProviderConfig and flags) or a kubelet-ts plugin tapping
 * `imageCredentials`; a provider that fails is one clear event and a pull retried with back-off;
 * answers are cached as the provider says.
 */
describe('image credential providers: pulls from a password-protected registry without pull secrets', function () {
  this.timeout(300_000);
  let env: NodeEnv;
  let dir: string;
  let reg: PrivateRegistry;

  before(async function () {
    this.timeout(300_000);
    env = await nodeEnvOrSkip(this);
    privateRegistryUsableOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-creds-'));
    reg = await startPrivateRegistry(env, path.join(dir, 'registry'), ['kubelet-ts/private:1', 'kubelet-ts/private-b:1']);
  });

  after(async function () {
    await reg?.stop();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  const V1 = 'credentialprovider.kubelet.k8s.io/v1';
  /** A container of the private image, pulled every time (so each pod's pull reaches the registry). */
  const privateContainer = (image: string) => ({ name: 'c', image, imagePullPolicy: 'Always', command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] });
  /** A CredentialProviderConfig file for one provider serving the private registry. */
  async function providerConfigFile(where: string, provider: object): Promise<string> {
    const file = path.join(where, 'credential-providers.yaml');
    await fs.writeFile(file, [
      'apiVersion: kubelet.config.k8s.io/v1',
      'kind: CredentialProviderConfig',
      'providers:',
      ...JSON.stringify(provider, null, 2).split('\n').map((l, i) => (i === 0 ? `  - ${l}` : `    ${l}`)),
      '',
    ].join('\n'));
    return file;
  }

  it('the registry refuses anonymous pulls (what the tests below get past)', async function () {
    const res = await fetch(`http://${reg.host}/v2/kubelet-ts/private/manifests/1`, { signal: AbortSignal.timeout(5000) });
    await res.arrayBuffer();
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Basic realm=/);
  });

  it('a static pod pulls through an exec provider named by the flags (the kubelet-ts process, the default bundle\'s plugin): request on stdin, args and env from the config', async function () {
    const where = path.join(dir, 'flags');
    const bin = path.join(where, 'bin');
    const fake = await writeFakeProvider(bin, 'loopback-credential-provider', { response: providerResponse(reg.host, reg.user, reg.password, { cacheDuration: '5m' }) });
    const config = await providerConfigFile(where, {
      name: 'loopback-credential-provider', matchImages: [reg.host], defaultCacheDuration: '10m', apiVersion: V1,
      args: ['get-credentials', '--registry', reg.host], env: [{ name: 'FAKE_PROVIDER_ENV', value: 'from-the-config' }],
    });
    const k = await startKubeletProcess(env, {
      command: [KUBELET_BIN, '--image-credential-provider-config', config, '--image-credential-provider-bin-dir', bin],
      plugins: [['credential-provider-exec']],
      config: { nodeName: 'creds-flags-node' },
    });
    try {
      await k.writeManifest('private.json', podManifest('private', [privateContainer(reg.images['kubelet-ts/private:1']!)], { hostNetwork: true, terminationGracePeriodSeconds: 1 }) as V1Pod);
      await waitFor('the private pod Running', async () => (await k.pods())?.find((p) => p.metadata?.name === 'private-creds-flags-node' && isRunning(p)), 90_000);
      const runs = await fake.runs();
      assert.equal(runs.length, 1);
      assert.deepEqual(JSON.parse(runs[0]!.request), { kind: 'CredentialProviderRequest', apiVersion: V1, image: `${reg.host}/kubelet-ts/private` });
      assert.deepEqual(runs[0]!.args, ['get-credentials', '--registry', reg.host]);
      assert.equal(runs[0]!.env, 'from-the-config');
      await k.removeManifest('private.json');
      await waitFor('the pod removed', async () => (await k.pods())?.length === 0, 60_000);
    } finally {
      await k.stop();
    }
  });

  it('caching as the provider says: one run for two pulls within cacheDuration (cacheKeyType Registry covers the registry\'s other repositories)', async function () {
    const where = path.join(dir, 'cache');
    const bin = path.join(where, 'bin');
    const fake = await writeFakeProvider(bin, 'registry-wide', { response: providerResponse(reg.host, reg.user, reg.password, { cacheKeyType: 'Registry', cacheDuration: '10m' }) });
    const config = await providerConfigFile(where, { name: 'registry-wide', matchImages: [reg.host], defaultCacheDuration: '0s', apiVersion: V1 });
    const t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ['credential-provider-exec']],
      config: { nodeName: 'creds-cache-node', imageCredentialProviderConfig: config, imageCredentialProviderBinDir: bin },
      dir: path.join(where, 'kubelet'),
    });
    try {
      await t.writeManifest('a.json', podManifest('cached-a', [privateContainer(reg.images['kubelet-ts/private:1']!)], { hostNetwork: true, terminationGracePeriodSeconds: 1 }));
      await t.waitForPod('cached-a', isRunning, 90_000, 'Running');
      await t.writeManifest('b.json', podManifest('cached-b', [privateContainer(reg.images['kubelet-ts/private-b:1']!)], { hostNetwork: true, terminationGracePeriodSeconds: 1 }));
      await t.waitForPod('cached-b', isRunning, 90_000, 'Running');
      const runs = await fake.runs();
      assert.equal(runs.length, 1, 'the second pull used the cached answer');
      assert.equal(JSON.parse(runs[0]!.request).image, `${reg.host}/kubelet-ts/private`);
    } finally {
      await t.dispose();
    }
  });

  it('a kubelet-ts plugin tapping imageCredentials provides the credentials in-process, no exec', async function () {
    const asked: string[] = [];
    const vendor = definePlugin({
      name: 'vendor-registry-credentials',
      apply(ctx) {
        ctx.hooks.imageCredentials.tapPromise({ name: 'vendor-registry-credentials', stage: STAGE.DEFAULT }, async (draft, request) => {
          if (!request.repository.startsWith(`${reg.host}/`)) return draft;
          asked.push(request.repository);
          return { ...draft, credentials: [...draft.credentials, { from: 'vendor vault', username: reg.user, password: reg.password }] };
        });
      },
    });
    const t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], vendor], config: { nodeName: 'creds-sdk-node' }, dir: path.join(dir, 'sdk') });
    try {
      await t.writeManifest('p.json', podManifest('vendor', [privateContainer(reg.images['kubelet-ts/private:1']!)], { hostNetwork: true, terminationGracePeriodSeconds: 1 }));
      await t.waitForPod('vendor', isRunning, 90_000, 'Running');
      assert.deepEqual(asked, [`${reg.host}/kubelet-ts/private`]);
    } finally {
      await t.dispose();
    }
  });

  describe('with the control plane', function () {
    const suite = clusterSuite('kts-creds-api-');

    it('a provider that exits 1: one clear Warning event on the pod, ErrImagePull then ImagePullBackOff, retried with back-off; the kubelet keeps running', async function () {
      const where = path.join(dir, 'failing');
      const bin = path.join(where, 'bin');
      const fake = await writeFakeProvider(bin, 'failing-provider', { exitCode: 1, stderr: 'no credentials for you' });
      const config = await providerConfigFile(where, { name: 'failing-provider', matchImages: [reg.host], defaultCacheDuration: '10m', apiVersion: V1 });
      const n = suite.node('creds');
      const kubelet = await suite.kubelet(n, {
        plugins: [['credential-provider-exec']],
        config: { imageCredentialProviderConfig: config, imageCredentialProviderBinDir: bin, imagePullBackOff: { initialMs: 1000, maxMs: 4000 } },
      });
      await suite.nodeReady(n.name);
      const ns = await suite.namespace('creds');
      await suite.core.createNamespacedPod({
        namespace: ns,
        body: { metadata: { name: 'denied' }, spec: { nodeName: n.name, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [privateContainer(reg.images['kubelet-ts/private:1']!)] } },
      });
      const pulled = await waitFor('ErrImagePull with the registry\'s refusal', async () => {
        const w = (await suite.core.readNamespacedPod({ name: 'denied', namespace: ns })).status?.containerStatuses?.[0]?.state?.waiting;
        return w?.reason === 'ErrImagePull' && w;
      }, 60_000);
      assert.match(pulled.message ?? '', /^Failed to pull image ".*kubelet-ts\/private:1": .*(401 Unauthorized|unauthorized|authorization failed)/i);
      await waitFor('ImagePullBackOff', async () => (await suite.core.readNamespacedPod({ name: 'denied', namespace: ns })).status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff', 60_000);
      // Retried after the back-off (1 s, then 2 s, 4 s): the provider runs again, never the kubelet down.
      await waitFor('the provider run again', async () => (await fake.runs()).length >= 2, 30_000);
      const events = await waitFor('the Warning event, counted on retries', async () => {
        const list = (await suite.core.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.reason === 'FailedToRetrieveImageCredentials');
        return list.length > 0 && (list[0]!.count ?? 1) >= 2 && list;
      }, 60_000);
      assert.equal(events.length, 1, 'one event, counted, not one per attempt');
      const [event] = events;
      assert.equal(event!.type, 'Warning');
      assert.equal(event!.involvedObject.name, 'denied');
      assert.equal(event!.involvedObject.fieldPath, 'spec.containers{c}');
      assert.equal(event!.message, `Failed getting credential from external registry credential provider "failing-provider": error execing credential provider plugin failing-provider for image ${reg.host}/kubelet-ts/private: exit status 1: no credentials for you; attempting to pull the image may not succeed.`);
      assert.ok(kubelet.kubelet.runtime, 'the kubelet is up');
      await suite.core.deleteNamespacedPod({ name: 'denied', namespace: ns, body: { gracePeriodSeconds: 0 } });
    });
  });
});
