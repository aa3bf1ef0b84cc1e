/**
 * API errors with messages an operator can act on. A request fails in one of five ways, and
 * each message says which and names what matters for it: the server URL when it cannot be
 * reached or does not answer, the CA when its certificate does not verify, the identity when
 * the credentials are refused (401) or the request is not allowed (403: who, which verb, on
 * what, and the server's own reason), the server's Status message otherwise.
 */
import { KubeletError, type ErrorCode } from '../errors.ts';
import { formatDuration } from '../util/duration.ts';
import { describeTarget, type RequestInfo } from './request-info.ts';

/** How a request failed. */
export type ApiFailure = 'unreachable' | 'timeout' | 'tls' | 'status';

/** The parts of a v1 Status body the kubelet reads. */
export interface ApiStatus { message?: string; reason?: string; code?: number; details?: { name?: string; kind?: string; causes?: Array<{ message?: string; field?: string; reason?: string }> } }

export class ApiError extends KubeletError {
  readonly failure: ApiFailure;
  /** The HTTP status, for failure 'status'. */
  readonly statusCode: number | undefined;
  /** The Status reason ('NotFound', 'AlreadyExists', 'Conflict', 'Forbidden', 'Expired', 'Gone', ...). */
  readonly reason: string | undefined;
  readonly request: RequestInfo;
  /** The server's Status body, when it sent one. */
  readonly status: ApiStatus | undefined;

  constructor(args: { code: ErrorCode; failure: ApiFailure; message: string; request: RequestInfo; statusCode?: number; reason?: string; status?: ApiStatus; cause?: unknown }) {
    super(args.code, args.message, { cause: args.cause });
    this.name = 'ApiError';
    this.failure = args.failure;
    this.statusCode = args.statusCode;
    this.reason = args.reason;
    this.request = args.request;
    this.status = args.status;
  }
}

export const isApiError = (err: unknown): err is ApiError => err instanceof ApiError;
/** The object does not exist (404). */
export const isNotFoundError = (err: unknown) => isApiError(err) && err.statusCode === 404;
/** The object exists already (409 AlreadyExists). */
export const isAlreadyExistsError = (err: unknown) => isApiError(err) && err.statusCode === 409 && err.reason === 'AlreadyExists';
/** Optimistic concurrency lost (409 Conflict). */
export const isConflictError = (err: unknown) => isApiError(err) && err.statusCode === 409 && err.reason !== 'AlreadyExists';
/** The resourceVersion is too old (410 Gone, or a watch's Expired). */
export const isGoneError = (err: unknown) => isApiError(err) && (err.statusCode === 410 || err.reason === 'Expired' || err.reason === 'Gone');
/**
 * The server has not reached the resourceVersion asked for (a watch or list from a
 * resourceVersion above its own, as after etcd was restored from an older backup): a Status
 * with the cause ResourceVersionTooLarge, or (API servers 1.17.0-1.18.5) a Timeout whose cause
 * says "Too large resource version". client-go's isTooLargeResourceVersionError.
 */
export function isTooLargeResourceVersion(status: ApiStatus | undefined): boolean {
  const causes = status?.details?.causes ?? [];
  if (causes.some((c) => c.reason === 'ResourceVersionTooLarge')) return true;
  return (status?.code === 504 || status?.reason === 'Timeout') && causes.some((c) => c.message === 'Too large resource version');
}

export const isTooLargeResourceVersionError = (err: unknown) => isApiError(err) && isTooLargeResourceVersion({ code: err.statusCode, reason: err.reason, ...err.status });

/** The server could not be reached or did not answer in time: retry later. */
export const isUnavailableError = (err: unknown) =>
  isApiError(err) && (err.failure === 'unreachable' || err.failure === 'timeout' || (err.statusCode !== undefined && [502, 503, 504].includes(err.statusCode)));

/** Socket and DNS error codes of a server that cannot be reached. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'ERR_STREAM_PREMATURE_CLOSE']);

/** OpenSSL / Node codes of a server certificate that does not verify. */
const TLS_VERIFY_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_SIGNATURE_FAILURE', 'CERT_UNTRUSTED', 'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID', 'INVALID_CA', 'HOSTNAME_MISMATCH',
]);

/** The innermost error code of a network error (a wrapper's `cause` chain is followed). */
function errorCode(err: unknown): string | undefined {
  let e = err as { code?: unknown; errno?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && e.code !== 'FETCH_ERROR' && e.code !== 'system') return e.code;
    if (typeof e.errno === 'string') return e.errno;
    e = e.cause as typeof e;
  }
  return undefined;
}

/** The socket error's own text, without a wrapper's "request to URL failed, reason:" prefix. */
function reasonText(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const m = /reason: (.*)$/s.exec(msg);
  return (m ? m[1]! : msg).trim();
}

/** Context an error message needs besides the request. */
export interface ErrorContext {
  /** The API server URL. */
  server: string;
  /** How to name the client (describeIdentity). */
  identity: string;
  /** Where the CA came from, for certificate errors. */
  kubeconfigFile?: string;
  /** The client certificate's expiry, for 401 hints. */
  certNotAfter?: number;
  /** The request timeout that fired, for timeouts. */
  timeoutMs?: number;
}

/** Turns a failure to get any HTTP response (network, TLS, abort) into an ApiError. */
export function transportError(err: unknown, request: RequestInfo, ctx: ErrorContext): ApiError {
  if (err instanceof ApiError) return err;
  const what = `${request.method} ${request.path}`;
  const name = (err as { name?: string; type?: string } | undefined)?.name;
  const type = (err as { type?: string } | undefined)?.type;
  if (name === 'AbortError' || type === 'aborted' || name === 'TimeoutError') {
    const within = ctx.timeoutMs !== undefined ? ` within ${formatDuration(ctx.timeoutMs)}` : '';
    return new ApiError({ code: 'DeadlineExceeded', failure: 'timeout', request, message: `the API server ${ctx.server} did not answer ${what}${within}`, cause: err });
  }
  const code = errorCode(err);
  if (code && TLS_VERIFY_CODES.has(code)) {
    const ca = ctx.kubeconfigFile ? `the certificate authority of kubeconfig ${ctx.kubeconfigFile}` : 'the configured certificate authority';
    return new ApiError({
      code: 'Unavailable', failure: 'tls', request, cause: err,
      message: `the API server ${ctx.server} presented a certificate that does not verify against ${ca}: ${reasonText(err)} (${code})`,
    });
  }
  const detail = reasonText(err);
  const known = code && NETWORK_CODES.has(code);
  return new ApiError({
    code: 'Unavailable', failure: 'unreachable', request, cause: err,
    message: `cannot reach the API server ${ctx.server}${known ? '' : ` (${what})`}: ${detail}`,
  });
}

/** Turns an HTTP error response (status >= 400) with its body into an ApiError. */
export function statusError(statusCode: number, body: string, request: RequestInfo, ctx: ErrorContext): ApiError {
  let status: ApiStatus | undefined;
  try {
    const parsed = JSON.parse(body) as unknown;
    if (parsed && typeof parsed === 'object' && (parsed as { kind?: string }).kind === 'Status') status = parsed as ApiStatus;
  } catch {
    // not JSON: a proxy's page or plain text
  }
  const serverText = status?.message || body.trim().slice(0, 500) || httpText(statusCode);
  const reason = status?.reason || reasonFor(statusCode);
  const target = describeTarget(request);
  let message: string;
  let code: ErrorCode;
  switch (statusCode) {
    case 401: {
      const expired = ctx.certNotAfter !== undefined && ctx.certNotAfter < Date.now() ? ` (the client certificate expired ${new Date(ctx.certNotAfter).toISOString()})` : '';
      message = `the API server ${ctx.server} refused the credentials of ${ctx.identity} (401 Unauthorized)${expired}: ${serverText}`;
      code = 'Internal';
      break;
    }
    case 403:
      message = `${ctx.identity} may not ${request.verb} ${target}: ${serverText}`;
      code = 'Internal';
      break;
    case 404:
      message = serverText;
      code = 'NotFound';
      break;
    case 409:
      message = serverText;
      code = reason === 'AlreadyExists' ? 'AlreadyExists' : 'Internal';
      break;
    case 400:
    case 422:
      message = `${request.verb} ${target}: ${serverText}`;
      code = 'InvalidInput';
      break;
    default:
      message = `${request.verb} ${target}: ${statusCode} ${reason}: ${serverText}`;
      code = statusCode === 429 || statusCode >= 500 ? 'Unavailable' : 'Internal';
  }
  return new ApiError({ code, failure: 'status', message, request, statusCode, reason, ...(status ? { status } : {}) });
}

function reasonFor(statusCode: number): string {
  return ({ 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 405: 'MethodNotAllowed', 409: 'Conflict', 410: 'Gone', 422: 'Invalid', 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable', 504: 'Timeout' } as Record<number, string>)[statusCode] ?? `HTTP${statusCode}`;
}

function httpText(statusCode: number): string {
  return `HTTP ${statusCode}`;
}
