/**
 * Authentication of the main port's requests, as upstream's kubelet configures it
 * (pkg/kubelet/server BuildAuthn → apiserver DelegatingAuthenticatorConfig): client certificates
 * signed by the client CA (user = CN, groups = O), bearer tokens (the Authorization header, or a
 * WebSocket client's `base64url.bearer.authorization.k8s.io.<token>` protocol) checked with the
 * API server's TokenReview and cached, and, when enabled, anonymous requests. Credentials that
 * are presented and fail are a 401 even when anonymous requests are allowed (upstream's union
 * "fails on error"); only a request with none is anonymous.
 */
import { createHash } from 'node:crypto';
import type http from 'node:http';
import type tls from 'node:tls';
import type { ApiClient } from '../apiserver/api-client.ts';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { TtlCache } from '../util/ttl-cache.ts';

/** Who made a request. */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export type AuthnResult =
  /** Authenticated (or anonymous). */
  | { user: UserInfo; error?: undefined }
  /** No user: `error` says why (logged, never sent: the client gets "Unauthorized"). */
  | { user?: undefined; error: string };

export const ANONYMOUS: Readonly<UserInfo> = Object.freeze({ name: 'system:anonymous', groups: ['system:unauthenticated'] });
/** The WebSocket subprotocol prefix that carries a bearer token (browsers cannot set headers). */
export const WEBSOCKET_TOKEN_PROTOCOL = 'base64url.bearer.authorization.k8s.io.';

export interface AuthenticatorOptions {
  /** Client certificates are checked (the TLS server was given the client CA). */
  x509: boolean;
  /** Bearer tokens are checked with TokenReview. */
  webhook: boolean;
  /** How long a TokenReview answer (yes or no) is reused. */
  cacheTtlMs: number;
  anonymous: boolean;
  /** The API client for TokenReview; undefined standalone (tokens are then refused). */
  client: () => ApiClient | undefined;
  logger: Logger;
  /** Deadline of one TokenReview. */
  reviewTimeoutMs?: number;
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

export class RequestAuthenticator {
  private readonly tokens: TtlCache<AuthnResult>;

  constructor(private readonly opts: AuthenticatorOptions) {
    this.tokens = new TtlCache<AuthnResult>(4096);
  }

  async authenticate(req: http.IncomingMessage): Promise<AuthnResult> {
    const errors: string[] = [];
    if (this.opts.x509) {
      const r = x509User(req);
      if (r?.user) return { user: withAuthenticatedGroup(r.user) };
      if (r?.error) errors.push(r.error);
    }
    const token = bearerToken(req);
    if (token !== undefined) {
      const r = await this.reviewToken(token);
      if (r.user) return r;
      errors.push(r.error);
    }
    if (errors.length) return { error: errors.join('; ') };
    if (this.opts.anonymous) return { user: { ...ANONYMOUS, groups: [...ANONYMOUS.groups] } };
    return { error: 'no credentials: no client certificate and no bearer token' };
  }

  /** TokenReview, cached by the token's hash for cacheTtlMs (answers only: a failed call is not cached). */
  private reviewToken(token: string): Promise<AuthnResult> {
    if (!this.opts.webhook) return Promise.resolve({ error: 'bearer tokens are not accepted (authentication.webhook.enabled is false)' });
    const client = this.opts.client();
    if (!client) return Promise.resolve({ error: 'a bearer token cannot be checked without an API server (standalone mode)' });
    const key = createHash('sha256').update(token).digest('hex');
    return this.tokens.getOrLoad(key, this.opts.cacheTtlMs, async () => {
      let status: TokenReviewStatus | undefined;
      try {
        const review = await client.request<{ status?: TokenReviewStatus }>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
          timeoutMs: this.opts.reviewTimeoutMs ?? 10_000,
        });
        status = review?.status;
      } catch (err) {
        this.opts.logger.warn({ err: errorMessage(err) }, 'TokenReview failed; the request is refused (401)');
        return { value: { error: `TokenReview failed: ${errorMessage(err)}` }, cache: false };
      }
      if (!status?.authenticated || !status.user?.username) return { value: { error: `token not authenticated${status?.error ? `: ${status.error}` : ''}` }, cache: true };
      const u = status.user;
      return {
        value: { user: withAuthenticatedGroup({ name: u.username!, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups ?? [], ...(u.extra ? { extra: u.extra } : {}) }) },
        cache: true,
      };
    });
  }
}

/** The client certificate's user, if the connection has a verified one; an error for one that does not verify. */
function x509User(req: http.IncomingMessage): AuthnResult | undefined {
  const socket = req.socket as tls.TLSSocket;
  if (!socket.encrypted || typeof socket.getPeerCertificate !== 'function') return undefined;
  const cert = socket.getPeerCertificate();
  if (!cert || Object.keys(cert).length === 0) return undefined;
  if (!socket.authorized) return { error: `client certificate does not verify: ${String(socket.authorizationError ?? 'unknown error')}` };
  const list = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
  const cn = list(cert.subject?.CN)[0];
  if (!cn) return { error: 'client certificate has no common name' };
  return { user: { name: cn, groups: list(cert.subject?.O) } };
}

/** The bearer token of the Authorization header, or of a WebSocket token subprotocol. */
export function bearerToken(req: http.IncomingMessage): string | undefined {
  const auth = req.headers.authorization?.trim();
  if (auth) {
    const parts = auth.split(/\s+/);
    if (parts.length === 2 && parts[0]!.toLowerCase() === 'bearer' && parts[1]) return parts[1];
  }
  const protocols = req.headers['sec-websocket-protocol'];
  if (typeof protocols === 'string') {
    for (const p of protocols.split(',').map((s) => s.trim())) {
      if (!p.startsWith(WEBSOCKET_TOKEN_PROTOCOL)) continue;
      const encoded = p.slice(WEBSOCKET_TOKEN_PROTOCOL.length);
      const token = Buffer.from(encoded, 'base64url').toString('utf8');
      if (token) return token;
    }
  }
  return undefined;
}

/** Every authenticated user is in system:authenticated (upstream's AuthenticatedGroupAdder). */
function withAuthenticatedGroup(u: UserInfo): UserInfo {
  return u.groups.includes('system:authenticated') ? u : { ...u, groups: [...u.groups, 'system:authenticated'] };
}
