import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { RouteHandler } from '../util/http-route.ts';

/** At most this many open connections to one server; more are refused until some close. */
const MAX_CONNECTIONS = 256;
/** A connection with no traffic for this long is closed (Node keeps one that never sends a byte forever). */
const IDLE_TIMEOUT_MS = 15_000;

/** A server could not listen: a clear operator error (the CLI prints it without a stack). */
export class ServerListenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerListenError';
  }
}

/**
 * The kubelet's read-only HTTP server (upstream --read-only-port): GET only, no auth, so it
 * serves only what the upstream read-only port serves. Components add routes by path.
 */
export class KubeletServer {
  private readonly routes = new Map<string, RouteHandler>();
  private server: http.Server | undefined;

  /** `name` says which server it is in its log line (the healthz server is one too). */
  constructor(private readonly logger: Logger, private readonly name = 'read-only') {}

  /** Adds a route for an exact path, or for a prefix when the path ends with '/'. */
  route(path: string, handler: RouteHandler): void {
    this.routes.set(path, handler);
  }

  /**
   * Listens on `address:port`. A port that is taken, or an address this host does not have,
   * fails with a message naming them and the config field (`what`), not a stack trace.
   */
  async listen(address: string, port: number, what = 'readOnlyPort'): Promise<number> {
    const server = http.createServer(
      {
        // Idle and slow clients are bounded: a connection with no traffic either way is closed
        // after IDLE_TIMEOUT_MS (a log follow lifts that for its own long-lived response), one
        // must send its request headers within 20 s and its whole request within 30 s, an idle
        // keep-alive connection is closed after 5 s, and at most MAX_CONNECTIONS are open at
        // once. (The headers timeout must not be shorter than the idle one: Node 20 then
        // expires a silent connection without closing it, and the idle timeout never fires.)
        headersTimeout: 20_000,
        requestTimeout: 30_000,
        connectionsCheckingInterval: 2_000,
        maxHeaderSize: 16 * 1024,
      },
      (req, res) => void this.handle(req, res),
    );
    server.keepAliveTimeout = 5000;
    server.timeout = IDLE_TIMEOUT_MS;
    server.maxConnections = MAX_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        const why = err.code === 'EADDRINUSE' ? 'address already in use' : err.code === 'EADDRNOTAVAIL' ? 'no such address on this host' : err.code === 'EACCES' ? 'permission denied' : err.message;
        reject(new ServerListenError(`cannot listen on ${address}:${port} (${what}): ${why}`));
      });
      server.listen(port, address, () => resolve());
    });
    this.server = server;
    const bound = (server.address() as AddressInfo).port;
    this.logger.info({ address, port: bound }, `${this.name} server listening`);
    return bound;
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://kubelet');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    const handler = this.routes.get(url.pathname) ?? [...this.routes.entries()].find(([p]) => p.endsWith('/') && url.pathname.startsWith(p))?.[1];
    if (!handler) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found\n');
      return;
    }
    try {
      const body = await handler(req, url, res);
      if (res.headersSent || res.writableEnded) return;
      if (typeof body === 'string') res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
      else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode ?? 500;
      if (status >= 500) this.logger.warn({ path: url.pathname, err: errorMessage(err) }, 'request failed');
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(`${errorMessage(err)}\n`);
    }
  }
}
