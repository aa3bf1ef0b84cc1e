import net from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * A loopback TCP proxy in front of a server, to cut it off and bring it back on the same port:
 * an API server outage as a kubelet sees it (connections reset, then refused), without
 * stopping the shared control plane. TLS passes through untouched. With `bytesPerSecond`,
 * what the server sends passes at most that fast (all connections together): a slow
 * registry, so that a pull of a few tens of MB takes seconds and its progress can be watched.
 * `blackHole()` is the other way a connection dies: it stays open and carries nothing.
 */
export interface TcpProxy {
  port: number;
  /** Resets every connection and stops listening: connects are refused. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  /**
   * Black-holes every connection open now: it stays open, and what either side sends is
   * dropped (a half-open connection, a proxy that lost its way). A black-holed connection the
   * client then writes to (a new request on a kept-alive connection) is reset, so that only
   * those the client merely listens on, watches, stay dead; new connections pass as before.
   * Returns how many connections were black-holed.
   */
  blackHole(): number;
  /** Black-holed connections the client has closed since (it gave up on them). */
  readonly blackHolesClosedByClient: number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }, opts: { bytesPerSecond?: number } = {}): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let closedByClient = 0;
  const downstream = opts.bytesPerSecond ? sharedLink(opts.bytesPerSecond) : undefined;
  let server: net.Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.on('close', () => sockets.delete(sock));
          sock.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        const pair = { client, upstream };
        pairs.add(pair);
        client.on('close', () => pairs.delete(pair));
        client.pipe(upstream);
        if (downstream) upstream.pipe(downstream()).pipe(client);
        else upstream.pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        const addr = s.address();
        port = typeof addr === 'object' && addr ? addr.port : port;
        server = s;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const sock of sockets) sock.resetAndDestroy();
      sockets.clear();
      if (!server) return resolve();
      server.close(() => resolve());
      server = undefined;
    });
  const blackHole = () => {
    let n = 0;
    for (const { client, upstream } of pairs) {
      if (client.destroyed || upstream.destroyed) continue;
      n++;
      client.unpipe(upstream);
      upstream.unpipe();
      // Dropped, not buffered: the server's writes go nowhere, as into a dead route.
      upstream.on('data', () => {});
      let clientSpoke = false;
      client.on('data', () => {
        clientSpoke = true;
        client.resetAndDestroy();
        upstream.destroy();
      });
      client.on('close', () => {
        if (!clientSpoke) closedByClient++;
        upstream.destroy();
      });
    }
    pairs.clear();
    return n;
  };
  await listen();
  return {
    get port() {
      return port;
    },
    get blackHolesClosedByClient() {
      return closedByClient;
    },
    blackHole,
    cut: stop,
    restore: listen,
    close: stop,
  };
}

/** Transforms that together pass at most `bytesPerSecond`: each chunk waits for the link to be free, then takes its time. */
function sharedLink(bytesPerSecond: number): () => Transform {
  let freeAt = 0;
  return () =>
    new Transform({
      transform(chunk: Buffer, _enc, done: TransformCallback) {
        const now = Date.now();
        freeAt = Math.max(now, freeAt) + (chunk.length / bytesPerSecond) * 1000;
        const wait = freeAt - now;
        if (wait < 1) return done(null, chunk);
        setTimeout(() => done(null, chunk), wait);
      },
    });
}
