/**
 * The puller and image credential providers (the `imageCredentials` hook): upstream's keyring
 * order (the pod's pull secrets' credentials, then the providers'), each tried until a pull
 * succeeds; a provider that failed is one Warning event and the pull goes on; a tap that throws
 * cannot stop the pull either.
 */
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { Backoff } from '../../core/pod/backoff.ts';
import { ImagePuller } from '../../core/pod/image-puller.ts';
import { EventRecorder } from '../../core/events/event-recorder.ts';
import { silentLogger } from '../../core/logger.ts';
import { createHooks } from '../../core/hooks.ts';
import { isolateTaps } from '../../core/plugins/tap-isolation.ts';
import type { ImageCredentialsRequest } from '../../core/hooks.ts';
import type { ContainerRuntime, PodSandboxConfig, PullAuth } from '../../core/runtime/types.ts';
import type { ObjectSource } from '../../core/objects/object-source.ts';
import { hookContext } from '../../core/util/cancellation.ts';

const secretOf = (host: string, user: string) => ({
  metadata: { name: 'regcred' },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths: { [host]: { username: user, password: 'p' } } })).toString('base64') },
});

describe('image credential providers in the pull path', function () {
  const image = 'registry.example.com:5000/team/app:1';
  const pod = (secrets = false): V1Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u1' }, spec: { containers: [], ...(secrets ? { imagePullSecrets: [{ name: 'regcred' }] } : {}) } });
  const container = { name: 'c', image, imagePullPolicy: 'Always' as const };
  const objects = { secret: async () => secretOf('registry.example.com:5000', 'secret-user') } as unknown as ObjectSource;

  /** A runtime that accepts only `accept` as user (undefined: any pull, with or without credentials). */
  function registry(accept?: string) {
    const attempts: Array<PullAuth | undefined> = [];
    const runtime = {
      imageStatus: async () => null,
      pullImage: async (_img: string, auth?: PullAuth) => {
        attempts.push(auth);
        if (accept !== undefined && auth?.username !== accept) throw new Error('failed to pull and unpack image: 401 Unauthorized');
        return 'sha256:app';
      },
    } as unknown as ContainerRuntime;
    return { runtime, attempts };
  }

  function puller(runtime: ContainerRuntime, tap?: (request: ImageCredentialsRequest) => Promise<{ credentials: Array<{ from: string; username?: string; password?: string }>; failures: Array<{ provider: string; message: string }> }>) {
    const hooks = createHooks();
    isolateTaps(hooks, silentLogger(), { timeoutMs: 5000 });
    const seen: ImageCredentialsRequest[] = [];
    if (tap) {
      hooks.imageCredentials.tapPromise({ name: 'vendor-creds' }, async (draft, request) => {
        seen.push(request);
        const mine = await tap(request);
        return { credentials: [...draft.credentials, ...mine.credentials], failures: [...draft.failures, ...mine.failures] };
      });
    }
    const events = new EventRecorder({ nodeName: 'n', logger: silentLogger() });
    const p = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger(), events, providerCredentials: (r) => hooks.imageCredentials.promise({ credentials: [], failures: [] }, r, hookContext()) });
    const warnings = () => events.list(0).filter((e) => e.type === 'Warning' && e.reason === 'FailedToRetrieveImageCredentials').map((e) => e.message);
    return { p, seen, warnings };
  }

  it('tries the pull secrets\' credentials first, then the providers\', scoped to the image\'s registry, until one pulls', async function () {
    const { runtime, attempts } = registry('provider-user');
    const { p, seen } = puller(runtime, async () => ({ credentials: [{ from: 'credential provider "x"', username: 'provider-user', password: 'pw' }], failures: [] }));
    const r = await p.ensure(pod(true), container, {} as PodSandboxConfig, false, objects);
    assert.ok('imageRef' in r, JSON.stringify(r));
    assert.deepEqual(attempts.map((a) => a?.username), ['secret-user', 'provider-user']);
    assert.deepEqual(attempts[1], { serverAddress: 'https://registry.example.com:5000', username: 'provider-user', password: 'pw' });
    assert.equal(seen[0]!.repository, 'registry.example.com:5000/team/app', 'the provider is asked about the repository, as upstream asks');
    assert.equal(seen[0]!.image, image);
  });

  it('a provider that failed is one Warning event naming it; the pull goes on without its credentials, then backs off without asking again', async function () {
    const { runtime, attempts } = registry('someone');
    let asked = 0;
    const { p, warnings } = puller(runtime, async () => {
      asked++;
      return { credentials: [], failures: [{ provider: 'ecr', message: 'error execing credential provider plugin ecr for image registry.example.com:5000/team/app: exit status 1: denied' }] };
    });
    const first = await p.ensure(pod(), container, {} as PodSandboxConfig);
    assert.equal('reason' in first && first.reason, 'ErrImagePull');
    assert.match('message' in first ? first.message : '', /401 Unauthorized/);
    assert.deepEqual(attempts, [undefined], 'pulled without credentials, as upstream does when the provider gives none');
    assert.deepEqual(warnings(), ['Failed getting credential from external registry credential provider "ecr": error execing credential provider plugin ecr for image registry.example.com:5000/team/app: exit status 1: denied; attempting to pull the image may not succeed.']);
    const second = await p.ensure(pod(), container, {} as PodSandboxConfig);
    assert.equal('reason' in second && second.reason, 'ImagePullBackOff');
    assert.equal(asked, 1, 'no provider run during the back-off');
  });

  it('a tap that throws cannot stop the pull: the pull secrets still count, and the error is one Warning event naming the plugin', async function () {
    const { runtime, attempts } = registry('secret-user');
    const { p, warnings } = puller(runtime, async () => {
      throw new Error('vendor bug');
    });
    const r = await p.ensure(pod(true), container, {} as PodSandboxConfig, false, objects);
    assert.ok('imageRef' in r);
    assert.deepEqual(attempts.map((a) => a?.username), ['secret-user']);
    assert.deepEqual(warnings(), [`Failed getting credential from external registry credential provider "vendor-creds": plugin 'vendor-creds' (hook imageCredentials): vendor bug; attempting to pull the image may not succeed.`]);
  });

  it('malformed credentials from a tap are left out with a warning, never sent to the runtime', async function () {
    const { runtime, attempts } = registry();
    const { p, warnings } = puller(runtime, async () => ({ credentials: [{ from: 'x', username: 7 as unknown as string }, { from: 'y', username: 'ok', password: 'p' }], failures: [] }));
    await p.ensure(pod(), container, {} as PodSandboxConfig);
    assert.deepEqual(attempts.map((a) => a?.username), ['ok']);
    assert.equal(warnings().length, 1);
  });

  it('is not asked when the image is present and the policy does not pull', async function () {
    const runtime = { imageStatus: async () => ({ id: 'sha256:app', repoTags: [], repoDigests: [] }), pullImage: async () => assert.fail('no pull') } as unknown as ContainerRuntime;
    const { p, seen } = puller(runtime, async () => ({ credentials: [], failures: [] }));
    await p.ensure(pod(), { ...container, imagePullPolicy: 'IfNotPresent' }, {} as PodSandboxConfig);
    assert.equal(seen.length, 0);
  });
});
