import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { checkProviderBinaries, readCredentialProviderConfig } from '../../plugins/credential-provider-exec/provider-config.ts';
import { decodeResponse, execProvider, ProviderExecError, type ProviderResponse } from '../../plugins/credential-provider-exec/exec-provider.ts';
import { ExecCredentialProvider, MAX_ENTRIES } from '../../plugins/credential-provider-exec/exec-credential-provider.ts';
import { startPluginsForTest } from '../../core/sdk/testing/plugin-harness.ts';
import type { ImageCredentialsRequest } from '../../core/hooks.ts';
import { providerConfig, providerResponse, writeFakeProvider } from '../support/fake-credential-provider.ts';
import { hookContext } from '../../core/util/cancellation.ts';

const V1 = 'credentialprovider.kubelet.k8s.io/v1';
const provider = (extra: object = {}) => ({ name: 'fake', matchImages: ['127.0.0.1:5000'], defaultCacheDuration: '10m', apiVersion: V1, ...extra });

describe('credential-provider-exec', function () {
  let dir: string;
  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-credprov-'));
  });
  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** Writes a config file and reads it back as the plugin does; returns the error message, or undefined when it read. */
  async function configError(text: string, name = 'config.yaml'): Promise<string | undefined> {
    const file = path.join(dir, name);
    await fs.writeFile(file, text);
    return readCredentialProviderConfig(file).then(() => undefined, (err: Error) => err.message);
  }

  describe('CredentialProviderConfig', function () {
    it('reads upstream\'s YAML with every field', async function () {
      const file = path.join(dir, 'config.yaml');
      await fs.writeFile(file, [
        'apiVersion: kubelet.config.k8s.io/v1',
        'kind: CredentialProviderConfig',
        'providers:',
        '  - name: ecr-credential-provider',
        '    matchImages: ["*.dkr.ecr.*.amazonaws.com", "*.dkr.ecr.*.amazonaws.com.cn"]',
        '    defaultCacheDuration: "12h"',
        '    apiVersion: credentialprovider.kubelet.k8s.io/v1',
        '    args: [get-credentials]',
        '    env: [{name: AWS_PROFILE, value: temp}]',
        '',
      ].join('\n'));
      const [p] = await readCredentialProviderConfig(file);
      assert.deepEqual(p, {
        name: 'ecr-credential-provider', matchImages: ['*.dkr.ecr.*.amazonaws.com', '*.dkr.ecr.*.amazonaws.com.cn'], defaultCacheDurationMs: 12 * 3600_000,
        apiVersion: V1, args: ['get-credentials'], env: [{ name: 'AWS_PROFILE', value: 'temp' }], file,
      });
    });

    it('reads v1beta1 and v1alpha1 configs and exec versions too', async function () {
      const file = path.join(dir, 'c.json');
      await fs.writeFile(file, JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'CredentialProviderConfig', providers: [provider({ apiVersion: 'credentialprovider.kubelet.k8s.io/v1alpha1' })] }));
      assert.equal((await readCredentialProviderConfig(file))[0]!.apiVersion, 'credentialprovider.kubelet.k8s.io/v1alpha1');
    });

    it('names the file and the field of each problem, all at once, in upstream\'s field-error wording', async function () {
      const message = await configError(providerConfig([
        provider({ name: 'a', matchImages: [] }),
        provider({ name: 'a', defaultCacheDuration: '-1s' }),
        provider({ name: 'b/c', matchImages: ['bad host'], defaultCacheDuration: undefined }),
        provider({ name: 'd', apiVersion: 'credentialprovider.kubelet.k8s.io/v2', extra: true }),
        provider({ name: 'e', env: [{ name: 'X' }], args: [1] }),
        provider({ name: 'f', tokenAttributes: { serviceAccountTokenAudience: 'x' } }),
      ]), 'config.json');
      const file = path.join(dir, 'config.json');
      for (const line of [
        `${file}: providers[0].matchImages: Required value: at least 1 item in matchImages is required`,
        `${file}: providers[1].defaultCacheDuration: Invalid value: "-1s": defaultCacheDuration must be greater than or equal to 0`,
        `${file}: providers[2].name: Invalid value: "b/c": provider name cannot contain '/'`,
        `${file}: providers[2].matchImages[0]: Invalid value: "bad host": match image is invalid: invalid character " " in host name`,
        `${file}: providers[2].defaultCacheDuration: Required value`,
        `${file}: unknown field "providers[3].extra"`,
        `${file}: providers[3].apiVersion: Unsupported value: "credentialprovider.kubelet.k8s.io/v2": supported values: "credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1beta1", "credentialprovider.kubelet.k8s.io/v1alpha1"`,
        `${file}: providers[4].args: Invalid value: must be a list of strings (without NUL characters)`,
        `${file}: providers[4].env[0].value: Required value`,
        `${file}: providers[5].tokenAttributes: Forbidden: service account tokens for credential providers are not supported by kubelet-ts`,
      ]) assert.ok(message?.split('\n').includes(line), `${line}\nin:\n${message}`);
      // Provider 1 has other problems: a duplicate is reported only among valid providers.
      assert.ok(!message?.includes('Duplicate'), message);
    });

    it('refuses duplicate names (also across the files of a config directory), no providers, a wrong kind or apiVersion, and bad YAML', async function () {
      assert.match((await configError(providerConfig([provider(), provider()])))!, /config\.yaml: providers\.name: Duplicate value: "fake"/);
      assert.match((await configError(providerConfig([])))!, /providers: Required value: at least 1 item in plugins is required/);
      assert.match((await configError('apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\nproviders: []\n'))!, /config\.yaml: kind: Unsupported value: "KubeletConfiguration": supported values: "CredentialProviderConfig"/);
      assert.match((await configError('apiVersion: v1\nkind: CredentialProviderConfig\n'))!, /config\.yaml: apiVersion: Unsupported value: "v1"/);
      assert.match((await configError('providers: [\n'))!, /config\.yaml: line \d+, column \d+/);
      const confDir = path.join(dir, 'conf.d');
      await fs.mkdir(confDir);
      await fs.writeFile(path.join(confDir, '10-a.yaml'), providerConfig([provider({ name: 'one' })]));
      await fs.writeFile(path.join(confDir, '20-b.json'), providerConfig([provider({ name: 'one' })]));
      await fs.writeFile(path.join(confDir, 'README'), 'not a config');
      await assert.rejects(readCredentialProviderConfig(confDir), /20-b\.json: providers\.name: Duplicate value: "one" \(also in .*10-a\.yaml\)/);
      await fs.writeFile(path.join(confDir, '20-b.json'), providerConfig([provider({ name: 'two' })]));
      assert.deepEqual((await readCredentialProviderConfig(confDir)).map((p) => p.name), ['one', 'two'], 'a directory\'s files in lexical order');
      await assert.rejects(readCredentialProviderConfig(path.join(dir, 'missing.yaml')), /missing\.yaml: unable to access the credential provider config/);
    });

    it('checks the bin dir and each provider\'s executable at start, as upstream', async function () {
      const bin = path.join(dir, 'bin');
      const specs = [{ ...provider({ name: 'present' }), defaultCacheDurationMs: 0, args: [], env: [], file: 'c.yaml' }, { ...provider({ name: 'absent' }), defaultCacheDurationMs: 0, args: [], env: [], file: 'c.yaml' }];
      await assert.rejects(checkProviderBinaries(bin, specs), new RegExp(`plugin binary directory ${bin} did not exist`));
      await fs.mkdir(bin);
      await fs.writeFile(path.join(bin, 'present'), '#!/bin/sh\n', { mode: 0o644 });
      await assert.rejects(checkProviderBinaries(bin, specs), (err: Error) => {
        assert.match(err.message, new RegExp(`plugin binary executable ${path.join(bin, 'present')} is not an executable file`));
        assert.match(err.message, new RegExp(`plugin binary executable ${path.join(bin, 'absent')} did not exist \\(provider "absent" of c\\.yaml\\)`));
        return true;
      });
      await fs.chmod(path.join(bin, 'present'), 0o755);
      await checkProviderBinaries(bin, specs.slice(0, 1));
    });
  });

  describe('exec protocol', function () {
    const spec = { name: 'fake', apiVersion: V1, args: ['get-credentials', '--region=x'], env: [{ name: 'FAKE_PROVIDER_ENV', value: 'from-config' }] };

    it('sends a CredentialProviderRequest on stdin with the config\'s args and env, and decodes the response', async function () {
      const fake = await writeFakeProvider(dir, 'fake', { response: providerResponse('127.0.0.1:5000', 'user', 'pass', { cacheKeyType: 'Registry', cacheDuration: '5m' }) });
      const res = await execProvider(spec, dir, '127.0.0.1:5000/team/app', { environ: { PATH: process.env.PATH, FAKE_PROVIDER_ENV: 'from-kubelet' } });
      assert.deepEqual(res, { cacheKeyType: 'Registry', cacheDurationMs: 300_000, auth: new Map([['127.0.0.1:5000', { username: 'user', password: 'pass' }]]) });
      const [run, ...more] = await fake.runs();
      assert.equal(more.length, 0);
      assert.deepEqual(JSON.parse(run!.request), { kind: 'CredentialProviderRequest', apiVersion: V1, image: '127.0.0.1:5000/team/app' });
      assert.deepEqual(run!.args, ['get-credentials', '--region=x']);
      assert.equal(run!.env, 'from-config', 'the config\'s env overrides the kubelet\'s');
    });

    it('a provider that exits 1: upstream\'s error with its exit status and stderr\'s first line', async function () {
      await writeFakeProvider(dir, 'fake', { exitCode: 1, stderr: 'AccessDenied: no role\nmore detail' });
      await assert.rejects(execProvider(spec, dir, 'r.io/app'), (err: ProviderExecError) => {
        assert.equal(err.message, 'error execing credential provider plugin fake for image r.io/app: exit status 1: AccessDenied: no role');
        assert.equal(err.stderr, 'AccessDenied: no role\nmore detail');
        return true;
      });
    });

    it('a provider that hangs is killed with what it started after the timeout', async function () {
      const fake = await writeFakeProvider(dir, 'fake', { sleepSeconds: 30, response: providerResponse('r.io', 'u', 'p') });
      const t0 = performance.now();
      await assert.rejects(execProvider(spec, dir, 'r.io/app', { timeoutMs: 300 }), /error execing credential provider plugin fake for image r\.io\/app: did not answer within 300ms \(context deadline exceeded\)/);
      assert.ok(performance.now() - t0 < 5000, 'the run ends at the timeout, not when the sleep would');
      assert.equal((await fake.runs()).length, 1);
    });

    it('garbage, a wrong apiVersion, a bad cacheKeyType, an unknown field or too much output is an error that quotes no credential', async function () {
      const run = async (response: object | string, opts: { maxStdoutBytes?: number } = {}) => {
        await writeFakeProvider(dir, 'fake', { response });
        return execProvider(spec, dir, 'r.io/app', opts).then(() => 'resolved', (err: Error) => err.message);
      };
      assert.match(await run('password=hunter2'), /^error reading GVK from response: the output is not JSON \(16 bytes\)$/);
      assert.equal(await run({ ...providerResponse('r.io', 'u', 'hunter2'), apiVersion: 'credentialprovider.kubelet.k8s.io/v1beta1' }), `apiVersion from credential plugin response did not match expected apiVersion:${V1}, actual apiVersion:credentialprovider.kubelet.k8s.io/v1beta1`);
      assert.equal(await run(providerResponse('r.io', 'u', 'hunter2', { cacheKeyType: 'Pod' })), 'credential provider plugin did not return a valid cacheKeyType: "Pod"');
      assert.equal(await run({ ...providerResponse('r.io', 'u', 'hunter2'), token: 'hunter2' }), 'error decoding credential provider plugin response from stdout: unknown field "token"');
      assert.equal(await run({ ...providerResponse('r.io', 'u', 'x'), auth: { 'r.io': { username: 'u', password: 7 } } }), 'error decoding credential provider plugin response from stdout: auth["r.io"].password is not a string');
      assert.equal(await run(providerResponse('r.io', 'u', 'hunter2', { cacheDuration: 'soon' })), 'error decoding credential provider plugin response from stdout: cacheDuration is not a Go duration such as "5m"');
      assert.match(await run('x'.repeat(5000), { maxStdoutBytes: 1000 }), /its output exceeds 1000 bytes/);
    });

    it('decodes an answer without auth or cacheDuration, and a negative duration', function () {
      const res = decodeResponse(Buffer.from(JSON.stringify({ kind: 'CredentialProviderResponse', apiVersion: V1, cacheKeyType: 'Global', cacheDuration: '-1m' })), V1);
      assert.deepEqual(res, { cacheKeyType: 'Global', cacheDurationMs: -60_000, auth: new Map() });
    });

    it('a provider missing from the bin dir is an error, not a crash', async function () {
      await assert.rejects(execProvider({ ...spec, name: 'absent' }, dir, 'r.io/app'), /error execing credential provider plugin absent for image r\.io\/app: spawn .*absent ENOENT/);
    });
  });

  describe('cache (cacheKeyType, cacheDuration, defaultCacheDuration)', function () {
    /** A provider whose runs answer `responses` in turn, with a clock the test moves. */
    function cached(responses: Array<Partial<ProviderResponse>>, defaultCacheDurationMs = 600_000) {
      const clock = { now: 1_000_000 };
      let i = 0;
      const images: string[] = [];
      const p = new ExecCredentialProvider({ name: 'fake', apiVersion: V1, args: [], env: [], matchImages: ['*.io', 'r.io'], defaultCacheDurationMs }, {
        binDir: dir,
        now: () => clock.now,
        exec: async (_spec, _bin, image) => {
          images.push(image);
          const r = responses[Math.min(i++, responses.length - 1)]!;
          if ('fail' in r) throw new Error('boom');
          return { cacheKeyType: 'Image', cacheDurationMs: undefined, auth: new Map([['r.io', { username: `run${i}`, password: 'p' }]]), ...r };
        },
      });
      return { p, clock, images };
    }
    const user = (auth: ProviderResponse['auth']) => auth.get('r.io')!.username;

    it('Image: cached for that image only, for cacheDuration', async function () {
      const { p, clock, images } = cached([{ cacheKeyType: 'Image', cacheDurationMs: 60_000 }]);
      assert.equal(user(await p.provide('r.io/a')), 'run1');
      assert.equal(user(await p.provide('r.io/a')), 'run1');
      assert.equal(user(await p.provide('r.io/b')), 'run2');
      clock.now += 60_001;
      assert.equal(user(await p.provide('r.io/a')), 'run3');
      assert.deepEqual(images, ['r.io/a', 'r.io/b', 'r.io/a']);
    });

    it('Registry: one answer for every image of the registry; Global: for every image the provider serves', async function () {
      const reg = cached([{ cacheKeyType: 'Registry' }]);
      await reg.p.provide('r.io/a');
      await reg.p.provide('r.io/b/c');
      await reg.p.provide('s.io/a');
      assert.deepEqual(reg.images, ['r.io/a', 's.io/a']);
      const global = cached([{ cacheKeyType: 'Global' }]);
      await global.p.provide('r.io/a');
      await global.p.provide('s.io/b');
      assert.deepEqual(global.images, ['r.io/a']);
    });

    it('no cacheDuration: defaultCacheDuration; a duration of 0 (either way) is not cached; failures are never cached', async function () {
      const byDefault = cached([{}], 30_000);
      await byDefault.p.provide('r.io/a');
      byDefault.clock.now += 29_000;
      await byDefault.p.provide('r.io/a');
      byDefault.clock.now += 2000;
      await byDefault.p.provide('r.io/a');
      assert.equal(byDefault.images.length, 2);
      const zero = cached([{ cacheDurationMs: 0 }]);
      await zero.p.provide('r.io/a');
      await zero.p.provide('r.io/a');
      assert.equal(zero.images.length, 2);
      const zeroDefault = cached([{}], 0);
      await zeroDefault.p.provide('r.io/a');
      await zeroDefault.p.provide('r.io/a');
      assert.equal(zeroDefault.images.length, 2);
      const failing = cached([{ fail: true } as Partial<ProviderResponse>]);
      await assert.rejects(failing.p.provide('r.io/a'), /boom/);
      await assert.rejects(failing.p.provide('r.io/a'), /boom/);
      assert.equal(failing.images.length, 2);
    });

    it('concurrent lookups of one image share one run; the cache stays bounded', async function () {
      const { p, images } = cached([{ cacheKeyType: 'Image' }]);
      await Promise.all([p.provide('r.io/a'), p.provide('r.io/a'), p.provide('r.io/a')]);
      assert.equal(images.length, 1);
      for (let n = 0; n < MAX_ENTRIES + 10; n++) await p.provide(`r.io/img${n}`);
      await p.provide('r.io/img0');
      assert.equal(images.length, 1 + MAX_ENTRIES + 10 + 1, 'the oldest answers went first');
    });
  });

  describe('the plugin', function () {
    const request = (image: string): ImageCredentialsRequest => ({ pod: { metadata: { name: 'p', namespace: 'default', uid: 'u1' } }, container: { name: 'c', image }, image, repository: image.replace(/:[^/]*$/, '') });

    it('declines to load without imageCredentialProviderConfig (so the default bundle carries it at no cost)', async function () {
      const t = await startPluginsForTest(['credential-provider-exec'], { rootDir: path.join(dir, 'root') });
      assert.equal(t.hooks.imageCredentials.taps.length, 0);
      await t.close();
    });

    it('answers the imageCredentials hook from the providers that match, failures apart', async function () {
      const bin = path.join(dir, 'bin');
      await writeFakeProvider(bin, 'good', { response: providerResponse('r.io', 'user', 'pass') });
      await writeFakeProvider(bin, 'bad', { exitCode: 1, stderr: 'denied' });
      await writeFakeProvider(bin, 'other', { response: providerResponse('s.io', 'x', 'y') });
      const config = path.join(dir, 'providers.json');
      await fs.writeFile(config, providerConfig([
        { name: 'good', matchImages: ['r.io'], defaultCacheDuration: '1m', apiVersion: V1 },
        { name: 'bad', matchImages: ['*.io'], defaultCacheDuration: '1m', apiVersion: V1 },
        { name: 'other', matchImages: ['s.io'], defaultCacheDuration: '1m', apiVersion: V1 },
      ]));
      const t = await startPluginsForTest(['credential-provider-exec'], { rootDir: path.join(dir, 'root'), config: { imageCredentialProviderConfig: config, imageCredentialProviderBinDir: bin } });
      try {
        const draft = await t.hooks.imageCredentials.promise({ credentials: [], failures: [] }, request('r.io/app:1'), hookContext());
        assert.deepEqual(draft.credentials, [{ from: 'credential provider "good"', username: 'user', password: 'pass' }]);
        assert.deepEqual(draft.failures, [{ provider: 'bad', message: 'error execing credential provider plugin bad for image r.io/app: exit status 1: denied' }]);
      } finally {
        await t.close();
      }
    });

    it('a bad config file fails the start naming the plugin, the file and the field', async function () {
      const config = path.join(dir, 'providers.json');
      await fs.writeFile(config, providerConfig([{ name: 'x', matchImages: [], defaultCacheDuration: '1m', apiVersion: V1 }]));
      await fs.mkdir(path.join(dir, 'bin'));
      await assert.rejects(
        startPluginsForTest(['credential-provider-exec'], { rootDir: path.join(dir, 'root'), config: { imageCredentialProviderConfig: config, imageCredentialProviderBinDir: path.join(dir, 'bin') } }),
        (err: Error) => err.message.includes(`plugin 'credential-provider-exec'`) && err.message.includes(`${config}: providers[0].matchImages: Required value`),
      );
    });
  });
});
