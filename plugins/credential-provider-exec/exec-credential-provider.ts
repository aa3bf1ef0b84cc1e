/**
 * One configured exec credential provider with upstream's cache (pkg/credentialprovider/plugin):
 *
 * - it serves only images its `matchImages` match;
 * - an answer is cached under the key its `cacheKeyType` says: the image (`Image`), the image's
 *   registry host (`Registry`), or every image the provider serves (`Global`); a lookup tries
 *   the image's key, then its registry's, then the global one;
 * - for the answer's `cacheDuration`, or the config's `defaultCacheDuration` when it gives none;
 *   a duration of 0 (either way) is not cached;
 * - concurrent lookups of one image share one run (upstream's singleflight);
 * - a failed run is not cached: the next pull attempt runs the provider again.
 * Expired entries are purged every 15 minutes (upstream's interval) and the cache holds at most
 * MAX_ENTRIES answers, the oldest going first.
 */
import { imageMatches, repositoryRegistry } from 'kubelet-ts';
import { execProvider, type ExecSpec, type ProviderResponse } from './exec-provider.ts';

export type AuthMap = ProviderResponse['auth'];

/** Upstream's purge interval of expired answers. */
const PURGE_INTERVAL_MS = 15 * 60_000;
/** Upper bound of cached answers per provider (one per image at most; a node pulls far fewer). */
export const MAX_ENTRIES = 4096;

/** What a provider needs besides its config: how to run it and what time it is (tests turn both). */
export interface ProviderDeps {
  binDir: string;
  now?: () => number;
  exec?: typeof execProvider;
  timeoutMs?: number;
}

/** A provider's spec as the cache needs it. */
export interface ProviderSpec extends ExecSpec { matchImages: readonly string[]; defaultCacheDurationMs: number }

/** The key an answer is cached under. */
export function cacheKey(type: ProviderResponse['cacheKeyType'], repository: string): string {
  return type === 'Image' ? `image:${repository}` : type === 'Registry' ? `registry:${repositoryRegistry(repository)}` : 'global';
}

export class ExecCredentialProvider {
  private readonly cache = new Map<string, { auth: AuthMap; expiresAt: number }>();
  private readonly inflight = new Map<string, Promise<AuthMap>>();
  private lastPurge: number;
  private readonly now: () => number;
  /** Runs of the provider so far (for the log and tests). */
  runs = 0;

  constructor(readonly spec: ProviderSpec, private readonly deps: ProviderDeps) {
    this.now = deps.now ?? Date.now;
    this.lastPurge = this.now();
  }

  get name(): string {
    return this.spec.name;
  }

  /** Whether this provider serves `repository` (one of its matchImages matches it). */
  matches(repository: string): boolean {
    return this.spec.matchImages.some((m) => imageMatches(m, repository));
  }

  /** The provider's auth map for `repository`: cached, or from a run (shared with concurrent lookups of it). Rejects when the run fails. */
  provide(repository: string): Promise<AuthMap> {
    const cached = this.cached(repository);
    if (cached) return Promise.resolve(cached);
    let run = this.inflight.get(repository);
    if (!run) {
      run = this.run(repository).finally(() => this.inflight.delete(repository));
      this.inflight.set(repository, run);
    }
    return run;
  }

  private cached(repository: string): AuthMap | undefined {
    const now = this.now();
    if (now - this.lastPurge > PURGE_INTERVAL_MS) {
      for (const [k, e] of this.cache) if (e.expiresAt <= now) this.cache.delete(k);
      this.lastPurge = now;
    }
    for (const key of [cacheKey('Image', repository), cacheKey('Registry', repository), cacheKey('Global', repository)]) {
      const entry = this.cache.get(key);
      if (!entry) continue;
      if (entry.expiresAt > now) return entry.auth;
      this.cache.delete(key);
    }
    return undefined;
  }

  private async run(repository: string): Promise<AuthMap> {
    this.runs++;
    const exec = this.deps.exec ?? execProvider;
    const response = await exec(this.spec, this.deps.binDir, repository, this.deps.timeoutMs !== undefined ? { timeoutMs: this.deps.timeoutMs } : {});
    const ttl = response.cacheDurationMs ?? this.spec.defaultCacheDurationMs;
    // An explicit 0, or no duration and a default of 0: not cached (upstream). A negative one expires at once.
    if (ttl !== 0) {
      const key = cacheKey(response.cacheKeyType, repository);
      this.cache.delete(key);
      this.cache.set(key, { auth: response.auth, expiresAt: this.now() + ttl });
      while (this.cache.size > MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    }
    return response.auth;
  }
}
