/**
 * Authorization of the main port's requests, as upstream's kubelet does it
 * (pkg/kubelet/server/auth.go): a request is an action on the node object, resource `nodes`,
 * name = the node, verb from the HTTP method, subresource from the path (`stats`, `metrics`,
 * `log`, `spec`, else `proxy`; `/pods`, `/runningpods/`, `/healthz` and `/configz` first try
 * their fine-grained `pods`, `healthz`, `configz` and fall back to `proxy`, as upstream's
 * KubeletFineGrainedAuthz). In Webhook mode each is a SubjectAccessReview, answers cached for
 * cacheAuthorizedTTL / cacheUnauthorizedTTL.
 */
import path from 'node:path';
import type { ApiClient } from '../apiserver/api-client.ts';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { UserInfo } from './authn.ts';
import { TtlCache } from '../util/ttl-cache.ts';

export interface RequestAttributes {
  verb: string;
  resource: 'nodes';
  /** The subresources to try, in order; the first allowed one admits the request. */
  subresources: string[];
  /** The node's name. */
  name: string;
}

/** Upstream's verb for an HTTP method (HEAD is a get here; upstream leaves it empty). */
export function apiVerb(method: string | undefined): string {
  switch (method) {
    case 'POST':
      return 'create';
    case 'GET':
    case 'HEAD':
      return 'get';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return (method ?? '').toLowerCase();
  }
}

/** `p` is `prefix` or below it. */
function isSubpath(p: string, prefix: string): boolean {
  return p === prefix || (p.startsWith(prefix) && p[prefix.length] === '/');
}

/** The attributes of a request to the kubelet API (upstream GetRequestAttributes). */
export function requestAttributes(method: string | undefined, pathname: string, nodeName: string): RequestAttributes {
  // Go's path.Clean: no trailing slash, no dot segments.
  const p = path.posix.normalize(pathname || '/').replace(/(.)\/+$/, '$1');
  const subresources: string[] = [];
  if (isSubpath(p, '/pods') || isSubpath(p, '/runningpods')) subresources.push('pods');
  else if (isSubpath(p, '/healthz')) subresources.push('healthz');
  else if (isSubpath(p, '/configz')) subresources.push('configz');
  if (isSubpath(p, '/stats')) subresources.push('stats');
  else if (isSubpath(p, '/metrics')) subresources.push('metrics');
  else if (isSubpath(p, '/logs')) subresources.push('log');
  else if (isSubpath(p, '/spec')) subresources.push('spec');
  else subresources.push('proxy');
  return { verb: apiVerb(method), resource: 'nodes', subresources, name: nodeName };
}

/** Upstream's 403 text: `Forbidden (user=..., verb=..., resource=nodes, subresource(s)=[...])`. */
export function forbiddenMessage(user: UserInfo, a: RequestAttributes): string {
  return `Forbidden (user=${user.name}, verb=${a.verb}, resource=${a.resource}, subresource(s)=[${a.subresources.join(' ')}])`;
}

export type AuthzResult =
  | { allowed: true }
  /** Denied (403), or the decision could not be made (500, `error` logged). */
  | { allowed: false; status: 403 | 500; message: string };

export interface AuthorizerOptions {
  mode: 'AlwaysAllow' | 'Webhook';
  cacheAuthorizedTtlMs: number;
  cacheUnauthorizedTtlMs: number;
  /** The API client for SubjectAccessReview; undefined standalone (Webhook then denies everything). */
  client: () => ApiClient | undefined;
  logger: Logger;
  reviewTimeoutMs?: number;
}

interface SarStatus { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string }

export class RequestAuthorizer {
  private readonly cache = new TtlCache<{ allowed: boolean; reason: string }>(8192);

  constructor(private readonly opts: AuthorizerOptions) {}

  async authorize(user: UserInfo, attrs: RequestAttributes): Promise<AuthzResult> {
    if (this.opts.mode === 'AlwaysAllow') return { allowed: true };
    const client = this.opts.client();
    if (!client) return { allowed: false, status: 403, message: `${forbiddenMessage(user, attrs)}: authorization mode Webhook needs an API server (standalone mode)` };
    for (const subresource of attrs.subresources) {
      let decision: { allowed: boolean; reason: string };
      try {
        decision = await this.review(client, user, attrs, subresource);
      } catch (err) {
        this.opts.logger.warn({ user: user.name, verb: attrs.verb, subresource, err: errorMessage(err) }, 'SubjectAccessReview failed');
        return { allowed: false, status: 500, message: `Authorization error (user=${user.name}, verb=${attrs.verb}, resource=${attrs.resource}, subresource=${subresource})` };
      }
      if (decision.allowed) return { allowed: true };
    }
    return { allowed: false, status: 403, message: forbiddenMessage(user, attrs) };
  }

  private review(client: ApiClient, user: UserInfo, attrs: RequestAttributes, subresource: string): Promise<{ allowed: boolean; reason: string }> {
    const key = JSON.stringify([user.name, user.uid ?? '', [...user.groups].sort(), user.extra ?? {}, attrs.verb, attrs.resource, subresource, attrs.name]);
    // An allowed answer and a denied one live for different times: look up with the longer, keep each for its own.
    return this.cache.getOrLoad(key, 0, async () => {
      const review = await client.request<{ status?: SarStatus }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: user.name,
            ...(user.uid ? { uid: user.uid } : {}),
            groups: user.groups,
            ...(user.extra ? { extra: user.extra } : {}),
            resourceAttributes: { verb: attrs.verb, group: '', version: 'v1', resource: attrs.resource, subresource, name: attrs.name },
          },
        },
        timeoutMs: this.opts.reviewTimeoutMs ?? 10_000,
      });
      const s = review?.status ?? {};
      const value = { allowed: s.allowed === true && s.denied !== true, reason: s.reason ?? '' };
      if (s.evaluationError) this.opts.logger.debug({ user: user.name, subresource, evaluationError: s.evaluationError }, 'SubjectAccessReview evaluation error');
      this.cache.put(key, value, value.allowed ? this.opts.cacheAuthorizedTtlMs : this.opts.cacheUnauthorizedTtlMs);
      return { value, cache: false };
    });
  }
}
