import net from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * A loopback TCP proxy that passes what the server sends at most `bytesPerSecond` (all
 * connections together): a slow registry, so that a pull of a few tens of MB takes seconds
 * and its progress can be watched. What the client sends passes untouched.
 */
export interface ThrottledProxy {
  port: number;
  close(): Promise<void>;
}

export async function startThrottledProxy(target: { host: string; port: number }, bytesPerSecond: number): Promise<ThrottledProxy> {
  const sockets = new Set<net.Socket>();
  // When the shared link is free again (ms): each chunk waits its turn and takes its time.
  let freeAt = 0;
  const throttle = () =>
    new Transform({
      transform(chunk: Buffer, _enc, done: TransformCallback) {
        const now = Date.now();
        const start = Math.max(now, freeAt);
        freeAt = start + (chunk.length / bytesPerSecond) * 1000;
        const wait = freeAt - now;
        if (wait < 1) return done(null, chunk);
        setTimeout(() => done(null, chunk), wait);
      },
    });
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const slow = throttle();
    for (const sock of [client, upstream]) {
      sockets.add(sock);
      sock.on('close', () => sockets.delete(sock));
      sock.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(slow).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const sock of sockets) sock.destroy();
        sockets.clear();
        server.close(() => resolve());
      }),
  };
}
