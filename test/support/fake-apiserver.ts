import fs from 'node:fs/promises';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A scripted HTTPS server on loopback that stands in for the API server in unit tests: the
 * edge cases a real one will not produce on demand (a 403 body, a certificate from another CA,
 * a 410 in the middle of a watch, a hostile pod). Uses the test-only PKI in test/cases/api-pki.
 */

export const PKI_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'cases', 'api-pki');

export type Handler = (req: IncomingMessage & { body: string; url: string }, res: ServerResponse) => void | Promise<void>;

export interface FakeApiServer {
  url: string;
  port: number;
  /** Requests seen, in order (method and path with query). */
  requests: Array<{ method: string; url: string; body: string; headers: IncomingMessage['headers'] }>;
  /** TCP connections accepted so far (keep-alive checks). */
  connections: number;
  /** Replaces the request handler. */
  handle(handler: Handler): void;
  close(): Promise<void>;
}

/** Starts the fake server. `cert: 'other'` serves a certificate signed by a CA the kubeconfig does not trust. */
export async function startFakeApiServer(handler: Handler, opts: { cert?: 'good' | 'other' } = {}): Promise<FakeApiServer> {
  const prefix = opts.cert === 'other' ? 'other-server' : 'server';
  const [key, cert] = await Promise.all([fs.readFile(path.join(PKI_DIR, `${prefix}.key`)), fs.readFile(path.join(PKI_DIR, `${prefix}.crt`))]);
  let current = handler;
  const sockets = new Set<Socket>();
  const state: FakeApiServer = {
    url: '',
    port: 0,
    requests: [],
    connections: 0,
    handle(h) {
      current = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server = https.createServer({ key, cert, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      state.requests.push({ method: req.method ?? '', url: req.url ?? '', body, headers: req.headers });
      Promise.resolve(current(Object.assign(req, { body, url: req.url ?? '' }), res)).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
  });
  server.on('secureConnection', () => state.connections++);
  // Every TCP connection, also one still in its TLS handshake: close() must end them all, or a
  // client reconnecting at that moment keeps the server (and the test's afterEach) open.
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  state.port = typeof addr === 'object' && addr ? addr.port : 0;
  state.url = `https://127.0.0.1:${state.port}`;
  return state;
}

/** Sends JSON with a status code. */
export function sendJSON(res: ServerResponse, code: number, body: unknown): void {
  res.statusCode = code;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(body));
}

/** A v1 Status body, as the API server sends with errors. */
export function status(code: number, reason: string, message: string, details?: object): object {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

/**
 * Writes a kubeconfig for `server` into a new temp dir and returns its path. `user` picks the
 * credentials: the test node certificate (files next to the kubeconfig, by relative path), a
 * token, or none.
 */
export async function writeKubeconfig(server: string, user: 'cert' | 'token' | 'none' = 'cert', extra: { dir?: string } = {}): Promise<string> {
  const dir = extra.dir ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'kts-kubeconfig-')));
  await fs.copyFile(path.join(PKI_DIR, 'ca.crt'), path.join(dir, 'ca.crt'));
  await fs.copyFile(path.join(PKI_DIR, 'node.crt'), path.join(dir, 'node.crt'));
  await fs.copyFile(path.join(PKI_DIR, 'node.key'), path.join(dir, 'node.key'));
  const userBlock =
    user === 'cert' ? '    client-certificate: node.crt\n    client-key: node.key\n' : user === 'token' ? '    token: secret-token\n' : '    {}\n';
  const text = `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: ${server}
    certificate-authority: ca.crt
users:
- name: test-user
  user:
${userBlock}contexts:
- name: test
  context:
    cluster: test
    user: test-user
current-context: test
`;
  const file = path.join(dir, 'kubeconfig');
  await fs.writeFile(file, text);
  return file;
}
