/**
 * How `kubelet-ts logs`, `explain` and `events` reach the local kubelet: plain HTTP on its local
 * socket `<rootDir>/kubelet-ts.sock` (mode 0600, so root on the node, as the kubelet itself is).
 * The main port would need credentials the API server vouches for, and the read-only port must
 * not serve logs; the socket works in both modes and with no cluster at all.
 */
import http from 'node:http';
import { localSocketPath } from '../server/start-main-server.ts';

/** The socket of the kubelet with this root dir. */
export { localSocketPath };

/** The kubelet could not be reached (no socket, refused, no answer). */
export class KubeletUnreachable extends Error {}

/**
 * GET `path` on the local socket; resolves with the response once its head arrived (the body is
 * the caller's to read), rejects with KubeletUnreachable when nothing answered within `timeoutMs`.
 */
export function localGet(socketPath: string, path: string, opts: { signal?: AbortSignal; timeoutMs: number }): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path, headers: { host: 'localhost' }, ...(opts.signal ? { signal: opts.signal } : {}) }, (res) => {
      clearTimeout(timer);
      resolve(res);
    });
    const timer = setTimeout(() => req.destroy(new Error(`no response within ${opts.timeoutMs} ms`)), opts.timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      if ((err as Error).name === 'AbortError') reject(err);
      else reject(new KubeletUnreachable(describe(err as NodeJS.ErrnoException)));
    });
  });
}

function describe(err: NodeJS.ErrnoException): string {
  if (err.code === 'ENOENT') return 'no socket there';
  if (err.code === 'ECONNREFUSED') return 'nothing listens on it';
  if (err.code === 'EACCES') return 'permission denied (it is root\'s)';
  return err.message || err.code || String(err);
}

/** Reads a whole (small) body as text. */
export async function readBody(res: http.IncomingMessage): Promise<string> {
  res.setEncoding('utf8');
  let body = '';
  for await (const d of res) body += d;
  return body;
}

/** The message for an unreachable kubelet. */
export function unreachableMessage(command: string, socketPath: string, err: unknown): string {
  return `kubelet-ts ${command}: cannot reach the kubelet at ${socketPath} (${(err as Error).message}); is it running with this root dir? (--root-dir DIR)`;
}
