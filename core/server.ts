import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from './logger.ts';
import { errorMessage } from './errors.ts';

/** A route handler: returns the response body (JSON-serialised unless a string) or writes it itself. */
export type RouteHandler = (req: http.IncomingMessage, url: URL, res: http.ServerResponse) => unknown | Promise<unknown>;

/**
 * The kubelet's read-only HTTP server (upstream --read-only-port): GET only, no auth, so it
 * serves only what the upstream read-only port serves. Components add routes by path.
 */
export class KubeletServer {
  private readonly routes = new Map<string, RouteHandler>();
  private server: http.Server | undefined;

  constructor(private readonly logger: Logger) {}

  /** Adds a route for an exact path, or for a prefix when the path ends with '/'. */
  route(path: string, handler: RouteHandler): void {
    this.routes.set(path, handler);
  }

  async listen(address: string, port: number): Promise<number> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 5000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, address, () => resolve());
    });
    this.server = server;
    const bound = (server.address() as AddressInfo).port;
    this.logger.info({ address, port: bound }, 'read-only server listening');
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

/** An error that becomes an HTTP status. */
export function httpError(statusCode: number, message: string): Error {
  return Object.assign(new Error(message), { statusCode });
}
