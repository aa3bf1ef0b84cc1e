import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import type { ImageCredentials, ImageCredentialsRequest } from '../../hooks.ts';
import { imageRepository } from '../../credentials/image-match.ts';
import { checkContract, describeContract, RuleNotApplicable, type ContractFailure, type ContractRule } from './contract.ts';
import { hookContext } from '../../util/cancellation.ts';
import type { PluginsUnderTest } from './plugin-harness.ts';

/**
 * The image-credentials contract: what the puller relies on from a plugin that taps
 * `imageCredentials` (an image credential provider). The hook is a waterfall shared by every
 * provider of the node, before the pull secrets' credentials are tried, so a provider adds to
 * the draft and keeps what others added; answers only for the images it serves; gives
 * credentials the runtime can take (strings, and a `from` for messages); answers a repeated
 * lookup the same way (whatever it caches); and reports a backend that fails as a `failures`
 * entry (one event on the pod) instead of throwing, which would lose every provider's credentials.
 */

export interface ImageCredentialsContractSubject {
  /** Applies the provider's plugin as a kubelet start does (e.g. with startPluginsForTest). */
  start(): Promise<PluginsUnderTest>;
  /** An image, as a pod spec names it, the provider has credentials for. */
  servedImage: string;
  /** An image it does not serve. */
  otherImage: string;
  /** An image it serves whose credentials cannot be had (its backend fails); without it the failure rule is skipped. */
  failingImage?: string;
}

interface Scenario { s: ImageCredentialsContractSubject; plugins: PluginsUnderTest | undefined }

/** The credential fields CRI's AuthConfig carries: strings when present. */
const AUTH_FIELDS = ['username', 'password', 'auth', 'serverAddress', 'identityToken', 'registryToken'] as const;

/** A credential and a failure that some other provider added before this one. */
const EARLIER: ImageCredentials = { credentials: [{ from: 'contract-earlier', username: 'earlier', password: 'earlier' }], failures: [{ provider: 'contract-earlier', message: 'earlier failure' }] };

async function lookup(sc: Scenario, image: string, draft: ImageCredentials = { credentials: [], failures: [] }): Promise<ImageCredentials> {
  sc.plugins ??= await sc.s.start();
  const hook = sc.plugins.hooks.imageCredentials;
  assert.ok(hook.taps.length > 0, 'no plugin taps imageCredentials');
  const uid = crypto.randomUUID();
  const request: ImageCredentialsRequest = {
    pod: { metadata: { name: `contract-${uid.slice(0, 8)}`, namespace: 'contract', uid }, spec: { containers: [{ name: 'c', image }] } },
    container: { name: 'c', image },
    image,
    repository: imageRepository(image),
  };
  const copy = structuredClone(draft);
  const result = await hook.promise(copy, request, hookContext());
  assert.ok(result && Array.isArray(result.credentials) && Array.isArray(result.failures), `the tap returned no draft of {credentials, failures} (${JSON.stringify(result)})`);
  return result;
}

/** The rules, in the order they run. */
export const imageCredentialsContractRules: ReadonlyArray<ContractRule<Scenario>> = [
  {
    name: 'gives well-formed credentials for an image it serves: a `from`, string fields, no failure',
    async run(sc) {
      const r = await lookup(sc, sc.s.servedImage);
      assert.ok(r.credentials.length > 0, `no credentials for ${sc.s.servedImage}`);
      assert.deepEqual(r.failures, [], 'a failure for an image it serves');
      for (const c of r.credentials) {
        assert.ok(typeof c.from === 'string' && c.from !== '', `a credential without a from (${Object.keys(c).join(', ')})`);
        for (const f of AUTH_FIELDS) assert.ok(c[f] === undefined || typeof c[f] === 'string', `a credential whose ${f} is a ${typeof c[f]}`);
      }
    },
  },
  {
    name: 'keeps what earlier providers added, in front of its own',
    async run(sc) {
      const r = await lookup(sc, sc.s.servedImage, EARLIER);
      assert.deepEqual(r.credentials.slice(0, EARLIER.credentials.length), EARLIER.credentials, 'an earlier provider\'s credentials were dropped or moved');
      assert.deepEqual(r.failures.slice(0, EARLIER.failures.length), EARLIER.failures, 'an earlier provider\'s failure was dropped or moved');
    },
  },
  {
    name: 'leaves the draft as it is for an image it does not serve',
    async run(sc) {
      assert.deepEqual(await lookup(sc, sc.s.otherImage, EARLIER), EARLIER);
    },
  },
  {
    name: 'answers a repeated lookup of an image the same way',
    async run(sc) {
      const first = await lookup(sc, sc.s.servedImage);
      const second = await lookup(sc, sc.s.servedImage);
      assert.deepEqual(second.credentials, first.credentials);
    },
  },
  {
    name: 'a backend that fails is a failures entry naming the provider, not a throw and no credential',
    async run(sc) {
      if (!sc.s.failingImage) throw new RuleNotApplicable('the subject names no failingImage');
      let r: ImageCredentials;
      try {
        r = await lookup(sc, sc.s.failingImage, EARLIER);
      } catch (err) {
        assert.fail(`the tap threw (every provider's credentials of the lookup are lost): ${(err as Error)?.message}`);
      }
      assert.deepEqual(r.credentials, EARLIER.credentials, 'credentials added for an image whose backend failed');
      const added = r.failures.slice(EARLIER.failures.length);
      assert.ok(added.length > 0, 'no failures entry for the failed backend');
      for (const f of added) assert.ok(typeof f.provider === 'string' && f.provider !== '' && typeof f.message === 'string' && f.message !== '', `a failures entry without a provider or message (${JSON.stringify(f)})`);
    },
  },
];

async function sweep(sc: Scenario): Promise<void> {
  await sc.plugins?.close().catch(() => {});
  sc.plugins = undefined;
}

const scenario = (s: ImageCredentialsContractSubject): Scenario => ({ s, plugins: undefined });

/** Runs every rule against an image credential provider; returns the broken ones (empty: it keeps the contract). */
export async function checkImageCredentialsContract(subject: ImageCredentialsContractSubject): Promise<ContractFailure[]> {
  return checkContract(imageCredentialsContractRules, subject, scenario, sweep);
}

/** Declares the image-credentials contract as a mocha suite, one test per rule. */
export function describeImageCredentialsContract(title: string, subject: () => Promise<ImageCredentialsContractSubject>, teardown?: () => Promise<void>): void {
  describeContract(`image-credentials contract: ${title}`, imageCredentialsContractRules, subject, scenario, sweep, teardown);
}
