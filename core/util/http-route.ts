import type http from 'node:http';

/**
 * The vocabulary of the kubelet's HTTP routes, shared by the servers (core/server/) and the
 * components that serve a route (logs, stats, metrics, events, timelines): low in the layers, so
 * a component names a handler without importing a server.
 */

/** A route handler: returns the response body (JSON-serialised unless a string) or writes it itself. */
export type RouteHandler = (req: http.IncomingMessage, url: URL, res: http.ServerResponse) => unknown | Promise<unknown>;

/** An error that becomes an HTTP status. */
export function httpError(statusCode: number, message: string): Error {
  return Object.assign(new Error(message), { statusCode });
}
