/**
 * The kubelet's main port (upstream `port`, 10250): HTTPS, every request authenticated (client
 * certificate, bearer token, or anonymous when allowed) and authorized (AlwaysAllow or a
 * SubjectAccessReview on nodes/<subresource>) before any route runs, so an unknown path is a 404
 * only for someone allowed to ask. The API server reaches it for logs, exec, attach and
 * port-forward; metrics-server for /metrics/resource.
 *
 * Beside it, the same routes on a unix socket `<rootDir>/kubelet-ts.sock` (mode 0600): the
 * local root's channel for `kubelet-ts logs|explain|events`. Whoever can open that socket is
 * root on the node already (or the kubelet's own user), so it needs no credentials, and it works
 * standalone, where no API server could authorize anything.
 *
 * Limits: connections that have not authenticated have a small budget of their own, per peer
 * address and in all, and deadlines for the handshake and the first request (connection-budget.ts:
 * a flood of sockets never pushes out the API server's connections); at most MAX_STREAMS proxied
 * streams at once (more get a 429), request headers of at most MAX_HEADER_BYTES (431), request
 * heads within seconds, idle connections closed; a stream is closed after streamingConnectionIdleTimeout
 * without traffic. Everything is per connection and non-blocking: a slow or stalled client holds
 * only its own connection.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type tlsModule from 'node:tls';
import type { Duplex } from 'node:stream';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { ServerListenError } from './read-only-server.ts';
import { ANONYMOUS, type RequestAuthenticator, type UserInfo } from './authn.ts';
import { ConnectionBudget, DEFAULT_BUDGET, type ConnectionLimits } from './connection-budget.ts';
import { requestAttributes, type RequestAuthorizer } from './authz.ts';
import { serveRoute, type RouteTable } from './routes.ts';
import type { ServingTls } from './serving-tls.ts';
import { proxyUpgrade, writeRawResponse } from './stream-proxy.ts';

/** Connections of the local socket (its clients are root on the node). */
const MAX_CONNECTIONS = 1024;
const MAX_STREAMS = 128;
/** Bearer tokens are a kilobyte or two; Node's default (16 KiB) would refuse a few long headers together. */
const MAX_HEADER_BYTES = 32 * 1024;
/** A connection with no traffic for this long is closed (a log follow lifts it for its own response). */
const IDLE_TIMEOUT_MS = 60_000;

/** The status line for a request the HTTP parser refused, by the parser's error code (as Node's default). */
const CLIENT_ERROR_STATUS: Record<string, string> = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: '413 Payload Too Large',
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
};

/** The identity of requests on the local socket (logs only: they are not authorized). */
export const LOCAL_USER: Readonly<UserInfo> = Object.freeze({ name: 'kubelet-ts:local-socket', groups: [] });

export interface MainServerOptions {
  address: string;
  port: number;
  /** Replaced by setServingPair when a new certificate comes. */
  tls: ServingTls;
  /** The local socket's path; undefined: none. */
  socketPath: string | undefined;
  nodeName: string;
  routes: RouteTable;
  authenticator: RequestAuthenticator;
  authorizer: RequestAuthorizer;
  streamIdleTimeoutMs: number;
  logger: Logger;
  maxStreams?: number;
  /** The budget of connections that have not authenticated (default DEFAULT_BUDGET). */
  connectionLimits?: Partial<ConnectionLimits>;
  /** Serve the port at all (upstream enableServer); the local socket is served either way. Default true. */
  serveTcp?: boolean;
  /**
   * Serve logs, exec, attach, port-forward, run and the debugging views on the port (upstream
   * enableDebuggingHandlers); when false they answer 405 "Debug endpoints are disabled." there,
   * as upstream's. The local socket (root on the node only) keeps them. Default true.
   */
  debuggingHandlers?: boolean;
}

/** The paths upstream serves only with enableDebuggingHandlers (its InstallDebuggingHandlers), by prefix. */
const DEBUGGING_PREFIXES = ['/run/', '/exec/', '/attach/', '/portForward/', '/containerLogs/', '/runningpods/', '/debug/', '/logs/'];
const DEBUGGING_DISABLED = 'Debug endpoints are disabled.';

/** Whether a path is one of the debugging handlers'. */
export function isDebuggingPath(pathname: string): boolean {
  return DEBUGGING_PREFIXES.some((p) => pathname.startsWith(p) || pathname === p.slice(0, -1));
}

export class MainServer {
  private https: https.Server | undefined;
  private local: http.Server | undefined;
  /** Client sockets of proxied streams (detached from the HTTP servers: closed here). */
  private readonly streams = new Set<Duplex>();
  private budget: ConnectionBudget | undefined;
  /** The port's TCP listener (connections go on to `https` with their first bytes). */
  private front: net.Server | undefined;
  /** The port the main server bound. */
  port = 0;
  /** The local socket, when it listens. */
  socketPath: string | undefined;

  constructor(private readonly opts: MainServerOptions) {}

  /** Streams being proxied now. */
  get activeStreams(): number {
    return this.streams.size;
  }

  /** Listens on address:port (HTTPS) unless the port is off, and on the local socket. */
  async listen(): Promise<number> {
    const { tls, logger } = this.opts;
    if (this.opts.serveTcp === false) {
      // Upstream's Node still reports the configured port; nothing answers there.
      this.port = this.opts.port;
    } else await this.listenTcp();
    if (this.opts.socketPath) {
      try {
        await this.listenLocal(this.opts.socketPath);
      } catch (err) {
        await this.close();
        throw err;
      }
    }
    if (this.opts.serveTcp === false) logger.info({ socket: this.socketPath ?? null }, 'main port off (enableServer: false): the API server cannot reach this kubelet for logs, exec, attach or port-forward; the local socket serves kubelet-ts commands');
    else logger.info({ address: this.opts.address, port: this.port, cert: tls.certFile ?? null, clientCA: tls.clientCAFrom ?? null, socket: this.socketPath ?? null, debuggingHandlers: this.opts.debuggingHandlers !== false }, tls.cert ? 'main server listening (HTTPS, authenticated)' : 'main server listening (HTTPS, authenticated); it refuses TLS handshakes until the cluster signs its serving certificate (serverTLSBootstrap)');
    return this.port;
  }

  /** The port: a TCP listener in front of an HTTPS server, every connection in the budget of strangers. */
  private async listenTcp(): Promise<void> {
    const { tls, logger } = this.opts;
    const limits = { ...DEFAULT_BUDGET, ...this.opts.connectionLimits };
    const server = https.createServer(
      {
        ...secureContextOptions(tls),
        ...(tls.clientCA ? { requestCert: true, rejectUnauthorized: false } : {}),
        handshakeTimeout: limits.handshakeMs,
        headersTimeout: 20_000,
        requestTimeout: 60_000,
        connectionsCheckingInterval: 2_000,
        maxHeaderSize: MAX_HEADER_BYTES,
      },
      (req, res) => void this.handle(req, res, false),
    );
    server.keepAliveTimeout = 15_000;
    server.timeout = IDLE_TIMEOUT_MS;
    // The port is a plain TCP listener in front of the TLS server: each connection is counted
    // in the budget of strangers from its accept, and reaches the TLS server with its first
    // bytes (no server.maxConnections: a cap counted before TLS and authentication is one
    // strangers fill).
    this.budget?.close();
    const budget = (this.budget = new ConnectionBudget(limits, logger));
    budget.attach(server);
    const front = net.createServer((raw) => budget.accept(raw, (r) => server.emit('connection', r)));
    server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void this.handleUpgrade(req, socket, head, false));
    // A request the parser refuses: the answer Node's default handler would give, but ended
    // rather than destroyed, so it is flushed through TLS on a socket that came from `front`.
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
      const status = CLIENT_ERROR_STATUS[err.code ?? ''] ?? '400 Bad Request';
      if (socket.writable && err.code !== 'ECONNRESET') socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
      setTimeout(() => socket.destroy(), 1000).unref();
    });
    server.on('tlsClientError', (err, socket) => {
      logger.debug({ err: err.message, ...(this.opts.tls.cert ? {} : { reason: 'no serving certificate yet (serverTLSBootstrap: its request waits for approval)' }) }, 'TLS handshake failed');
      socket.destroy();
    });
    await listenOn(front, { port: this.opts.port, host: this.opts.address }, `${this.opts.address}:${this.opts.port} (port)`);
    // The HTTPS server never listens itself: its request deadlines start as they would on listen.
    server.emit('listening');
    this.https = server;
    this.front = front;
    this.port = (front.address() as AddressInfo).port;
  }

  /**
   * Serves a new pair from now on (serverTLSBootstrap's issued or renewed certificate): new
   * handshakes get it, open connections keep the one they shook hands with.
   */
  setServingPair(pair: { cert: Buffer | string; key: Buffer | string; certFile: string }): void {
    this.opts.tls = { ...this.opts.tls, cert: Buffer.from(pair.cert), key: Buffer.from(pair.key), certFile: pair.certFile };
    this.https?.setSecureContext(secureContextOptions(this.opts.tls));
    this.opts.logger.info({ cert: pair.certFile }, 'main port serves a new certificate');
  }

  /** The local socket: created with no permission for others (umask during bind, then chmod 0600). */
  private async listenLocal(socketPath: string): Promise<void> {
    if (Buffer.byteLength(socketPath) > 107) {
      this.opts.logger.warn({ socket: socketPath }, 'the local socket path is longer than a unix socket path may be: kubelet-ts logs/explain/events cannot reach this kubelet (use a shorter rootDir)');
      return;
    }
    try {
      const st = fs.lstatSync(socketPath);
      if (!st.isSocket()) throw new ServerListenError(`cannot listen on ${socketPath} (the local socket): a file that is not a socket is there`);
      fs.unlinkSync(socketPath); // left by an earlier run
    } catch (err) {
      if (err instanceof ServerListenError) throw err;
    }
    const server = http.createServer({ headersTimeout: 20_000, requestTimeout: 60_000, maxHeaderSize: MAX_HEADER_BYTES }, (req, res) => void this.handle(req, res, true));
    server.timeout = IDLE_TIMEOUT_MS;
    server.maxConnections = MAX_CONNECTIONS;
    server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void this.handleUpgrade(req, socket, head, true));
    // The bind happens inside listen(), synchronously: the umask is restored before anything
    // else of the process creates a file.
    const old = process.umask(0o177);
    let listening: Promise<void>;
    try {
      listening = listenOn(server, { path: socketPath }, `${socketPath} (the local socket)`);
    } finally {
      process.umask(old);
    }
    await listening;
    fs.chmodSync(socketPath, 0o600);
    this.local = server;
    this.socketPath = socketPath;
  }

  async close(): Promise<void> {
    const front = this.front;
    this.front = undefined;
    const closedFront = front ? new Promise<void>((resolve) => front.close(() => resolve())) : Promise.resolve();
    this.budget?.close();
    for (const s of this.streams) s.destroy();
    this.streams.clear();
    const servers = [this.https, this.local].filter((s): s is http.Server => s !== undefined);
    this.https = undefined;
    this.local = undefined;
    await Promise.all(servers.map((s) => {
      s.closeAllConnections();
      // The HTTPS server never listened: its close only stops its timers (the callback gets "not running").
      return new Promise<void>((resolve) => s.close(() => resolve()));
    }));
    await closedFront;
    if (this.socketPath) {
      try {
        fs.unlinkSync(this.socketPath);
      } catch {
        // already gone
      }
      this.socketPath = undefined;
    }
  }

  /** Authentication and authorization of a request: the user, or the refusal to send. */
  private async admit(req: http.IncomingMessage, url: URL, local: boolean): Promise<{ user: UserInfo } | { status: number; message: string }> {
    if (local) return { user: LOCAL_USER };
    this.budget?.requesting(req.socket);
    let authn;
    try {
      authn = await this.opts.authenticator.authenticate(req);
    } catch (err) {
      authn = { error: errorMessage(err) };
    }
    if (!authn.user) {
      this.budget?.refused(req.socket);
      this.opts.logger.debug({ path: url.pathname, reason: authn.error }, 'unauthenticated request refused');
      return { status: 401, message: 'Unauthorized' };
    }
    // An anonymous request (when allowed) is still a stranger's: it keeps no authenticated slot.
    if (authn.user.name === ANONYMOUS.name) this.budget?.refused(req.socket);
    else if (this.budget && !this.budget.authenticated(req.socket)) {
      return { status: 429, message: 'too many authenticated connections to this kubelet; try again later' };
    }
    const attrs = requestAttributes(req.method, url.pathname, this.opts.nodeName);
    const z = await this.opts.authorizer.authorize(authn.user, attrs);
    if (!z.allowed) {
      this.opts.logger.debug({ path: url.pathname, user: authn.user.name, status: z.status }, z.message);
      return { status: z.status, message: z.message };
    }
    return { user: authn.user };
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse, local: boolean): Promise<void> {
    try {
      const url = parseUrl(req.url);
      if (!url) {
        res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' }).end('invalid request URL\n');
        return;
      }
      const admitted = await this.admit(req, url, local);
      if ('status' in admitted) {
        res.writeHead(admitted.status, { 'content-type': 'text/plain; charset=utf-8' }).end(`${admitted.message}\n`);
        return;
      }
      if (!local && this.opts.debuggingHandlers === false && isDebuggingPath(url.pathname)) {
        res.writeHead(405, { 'content-type': 'text/plain; charset=utf-8' }).end(`${DEBUGGING_DISABLED}\n`);
        return;
      }
      const route = this.opts.routes.find(url.pathname);
      if (!route) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
        return;
      }
      await serveRoute(route, req, res, url, this.opts.logger);
    } catch (err) {
      // No request may stop the kubelet: whatever escaped a handler is this request's 500.
      this.opts.logger.warn({ path: req.url?.split('?')[0], err: errorMessage(err) }, 'request failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end();
    }
  }

  private async handleUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer, local: boolean): Promise<void> {
    socket.on('error', () => socket.destroy());
    try {
      const url = parseUrl(req.url);
      if (!url) return writeRawResponse(socket, 400, 'invalid request URL');
      const admitted = await this.admit(req, url, local);
      if ('status' in admitted) return writeRawResponse(socket, admitted.status, admitted.message);
      if (!local && this.opts.debuggingHandlers === false && isDebuggingPath(url.pathname)) return writeRawResponse(socket, 405, DEBUGGING_DISABLED);
      const resolve = this.opts.routes.findUpgrade(url.pathname);
      if (!resolve) return writeRawResponse(socket, this.opts.routes.find(url.pathname) ? 400 : 404, this.opts.routes.find(url.pathname) ? 'this path does not upgrade' : '404 page not found');
      const max = this.opts.maxStreams ?? MAX_STREAMS;
      if (this.streams.size >= max) return writeRawResponse(socket, 429, `too many streams (${max}) open on this kubelet; try again later`, { 'Retry-After': '5' });
      let target: URL;
      try {
        target = await resolve(req, url);
      } catch (err) {
        const status = (err as { statusCode?: number }).statusCode ?? 500;
        if (status >= 500) this.opts.logger.warn({ path: url.pathname, err: errorMessage(err) }, 'stream request failed');
        return writeRawResponse(socket, status, errorMessage(err));
      }
      // The client left while the runtime prepared the session (its token expires unused).
      if (socket.destroyed) return;
      this.streams.add(socket);
      this.opts.logger.debug({ path: url.pathname, user: admitted.user.name, target: `${target.protocol}//${target.host}` }, 'stream opened');
      proxyUpgrade(req, socket, head, target, {
        idleTimeoutMs: this.opts.streamIdleTimeoutMs,
        logger: this.opts.logger,
        onClose: () => this.streams.delete(socket),
      });
    } catch (err) {
      this.opts.logger.warn({ path: req.url?.split('?')[0], err: errorMessage(err) }, 'stream request failed');
      writeRawResponse(socket, 500, errorMessage(err));
    }
  }
}

/** The server's secure context: the pair (when there is one), the client CA, the protocol limits. */
function secureContextOptions(tls: ServingTls): tlsModule.SecureContextOptions {
  return {
    ...(tls.key && tls.cert ? { key: tls.key, cert: tls.cert } : {}),
    ...(tls.clientCA ? { ca: tls.clientCA } : {}),
    ...(tls.minVersion ? { minVersion: tls.minVersion } : {}),
    ...(tls.ciphers ? { ciphers: tls.ciphers } : {}),
  };
}

function parseUrl(raw: string | undefined): URL | undefined {
  try {
    return new URL(raw ?? '/', 'https://kubelet');
  } catch {
    return undefined;
  }
}

/** Listens, or fails with a message naming the address and the field (not a stack trace). */
function listenOn(server: net.Server, where: { port: number; host: string } | { path: string }, what: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'address already in use' : err.code === 'EADDRNOTAVAIL' ? 'no such address on this host' : err.code === 'EACCES' ? 'permission denied' : err.message;
      reject(new ServerListenError(`cannot listen on ${what}: ${why}`));
    };
    server.once('error', onError);
    server.listen(where, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
