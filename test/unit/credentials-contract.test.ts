/**
 * The image-credentials contract (`kubelet-ts/testing`): credential-provider-exec keeps it with
 * fake exec providers, and a broken provider fails each rule, named.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { definePlugin, type KubeletPlugin } from '../../core/plugins/plugin-api.ts';
import type { ImageCredentials, ImageCredentialsRequest } from '../../core/hooks.ts';
import { startPluginsForTest } from '../../core/sdk/testing/plugin-harness.ts';
import { checkImageCredentialsContract, describeImageCredentialsContract, imageCredentialsContractRules } from '../../core/sdk/testing/credentials-contract.ts';
import { providerConfig, providerResponse, writeFakeProvider } from '../support/fake-credential-provider.ts';

const V1 = 'credentialprovider.kubelet.k8s.io/v1';
let dir: string;

describeImageCredentialsContract('credential-provider-exec', async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-credcontract-'));
  const bin = path.join(dir, 'bin');
  await writeFakeProvider(bin, 'good', { response: providerResponse('served.example.com', 'user', 'pass', { cacheDuration: '1m' }) });
  await writeFakeProvider(bin, 'broken', { exitCode: 1, stderr: 'backend down' });
  const config = path.join(dir, 'providers.json');
  await fs.writeFile(config, providerConfig([
    { name: 'good', matchImages: ['served.example.com'], defaultCacheDuration: '1m', apiVersion: V1 },
    { name: 'broken', matchImages: ['failing.example.com'], defaultCacheDuration: '1m', apiVersion: V1 },
  ]));
  return {
    start: () => startPluginsForTest(['credential-provider-exec'], { rootDir: path.join(dir, 'root'), config: { imageCredentialProviderConfig: config, imageCredentialProviderBinDir: bin } }),
    servedImage: 'served.example.com/team/app:1',
    otherImage: 'other.example.com/app:1',
    failingImage: 'failing.example.com/app:1',
  };
}, async () => {
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

describe('image-credentials contract: a broken provider fails the rule it breaks', function () {
  let root: string;
  before(async function () {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-credbroken-'));
  });
  after(async function () {
    await fs.rm(root, { recursive: true, force: true });
  });

  /** A provider that serves served.example.com and fails for failing.example.com, with `answer` deciding what it returns. */
  const provider = (name: string, answer: (draft: ImageCredentials, request: ImageCredentialsRequest) => ImageCredentials | Promise<ImageCredentials>): KubeletPlugin =>
    definePlugin({ name, apply: (ctx) => ctx.hooks.imageCredentials.tapPromise({ name }, async (draft, request) => answer(draft, request)) });
  const good = (draft: ImageCredentials, request: ImageCredentialsRequest): ImageCredentials => {
    if (request.repository.startsWith('served.example.com/')) return { ...draft, credentials: [...draft.credentials, { from: 'good', username: 'u', password: 'p' }] };
    if (request.repository.startsWith('failing.example.com/')) return { ...draft, failures: [...draft.failures, { provider: 'good', message: 'backend down' }] };
    return draft;
  };
  const check = (plugin: KubeletPlugin) => checkImageCredentialsContract({
    start: () => startPluginsForTest([plugin], { rootDir: path.join(root, plugin.name) }),
    servedImage: 'served.example.com/app:1',
    otherImage: 'other.example.com/app:1',
    failingImage: 'failing.example.com/app:1',
  });
  const rule = (i: number) => imageCredentialsContractRules[i]!.name;

  it('a provider keeping every rule passes (the broken ones below differ from it in one thing each)', async function () {
    assert.deepEqual(await check(provider('good', good)), []);
  });

  const broken: Array<[string, number, (draft: ImageCredentials, request: ImageCredentialsRequest) => ImageCredentials | Promise<ImageCredentials>]> = [
    ['no-from', 0, (d, r) => {
      const out = good(d, r);
      return { ...out, credentials: out.credentials.map((c) => (c.from === 'good' ? { ...c, from: '' } : c)) };
    }],
    // Drops the others' credentials when it has some of its own.
    ['drops-earlier', 1, (d, r) => (r.repository.startsWith('served.example.com/') ? good({ credentials: [], failures: d.failures }, r) : good(d, r))],
    // Answers for images it does not serve as if it served them.
    ['serves-everything', 2, (d, r) => good(d, r.repository.startsWith('other.example.com/') ? { ...r, repository: 'served.example.com/x' } : r)],
    ['unstable', 3, (d, r) => {
      const out = good(d, r);
      return { ...out, credentials: out.credentials.map((c) => (c.from === 'good' ? { ...c, password: String(Math.random()) } : c)) };
    }],
    ['throws', 4, (d, r) => {
      if (r.repository.startsWith('failing.example.com/')) throw new Error('backend down');
      return good(d, r);
    }],
  ];
  for (const [name, index, answer] of broken) {
    it(`${name}: fails "${rule(index)}" only`, async function () {
      const failures = await check(provider(name, answer));
      assert.deepEqual(failures.map((f) => f.rule), [rule(index)], JSON.stringify(failures));
    });
  }
});
