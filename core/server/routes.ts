/**
 * The main port's routes: plain handlers (the read-only server's `RouteHandler` contract: return
 * a body, or write the response yourself) with the HTTP methods each accepts, and upgrade routes
 * (exec, attach, port-forward) that resolve a request to the runtime's streaming URL, which the
 * server then proxies. Paths are exact, or prefixes when they end with '/'.
 */
import type http from 'node:http';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { RouteHandler } from '../util/http-route.ts';

/** Resolves an upgrade request to the URL of the runtime's streaming server that serves it. */
export type UpgradeResolver = (req: http.IncomingMessage, url: URL) => Promise<URL>;

interface Route {
  handler: RouteHandler;
  methods: readonly string[];
}

export class RouteTable {
  private readonly routes = new Map<string, Route>();
  private readonly upgrades = new Map<string, UpgradeResolver>();

  /** A handler for GET and HEAD (or `methods`). */
  add(path: string, handler: RouteHandler, methods: readonly string[] = ['GET', 'HEAD']): this {
    this.routes.set(path, { handler, methods });
    return this;
  }

  /** An upgrade route (an HTTP Upgrade request: SPDY or WebSocket). */
  addUpgrade(path: string, resolver: UpgradeResolver): this {
    this.upgrades.set(path, resolver);
    return this;
  }

  find(pathname: string): Route | undefined {
    return match(this.routes, pathname);
  }

  findUpgrade(pathname: string): UpgradeResolver | undefined {
    return match(this.upgrades, pathname);
  }
}

function match<T>(table: Map<string, T>, pathname: string): T | undefined {
  const exact = table.get(pathname);
  if (exact) return exact;
  let best: [string, T] | undefined;
  for (const entry of table) {
    if (entry[0].endsWith('/') && pathname.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  }
  return best?.[1];
}

/**
 * Runs a route and writes what it returns as the read-only server does: a string as text, an
 * object as JSON, an error with `statusCode` as that status (500 otherwise, logged).
 */
export async function serveRoute(route: Route, req: http.IncomingMessage, res: http.ServerResponse, url: URL, logger: Logger): Promise<void> {
  if (!route.methods.includes(req.method ?? '')) {
    res.writeHead(405, { allow: route.methods.join(', '), 'content-type': 'text/plain; charset=utf-8' }).end('405: Method Not Allowed\n');
    return;
  }
  try {
    const body = await route.handler(req, url, res);
    if (res.headersSent || res.writableEnded) return;
    if (typeof body === 'string') res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500) logger.warn({ path: url.pathname, err: errorMessage(err) }, 'request failed');
    if (!res.headersSent) res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`${errorMessage(err)}\n`);
  }
}
