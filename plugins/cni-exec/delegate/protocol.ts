import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * The shim ⇄ kubelet protocol on the unix socket, kept trivial so the shim can be a few
 * lines of Perl with no JSON module:
 *
 *   request:  `CNI-EXEC/1\n` + one `KEY=VALUE\n` line per CNI_* variable + `\n` + the stdin
 *             config, then the shim shuts down its write side;
 *   answer:   `<exit code>\n` + what the shim prints on stdout; then the kubelet closes.
 */
export const MAGIC = 'CNI-EXEC/1';

/** Requests larger than this are refused (a network config is a few KiB). */
const MAX_REQUEST = 4 << 20;

/** One CNI request as the runtime made it to the shim. */
export interface DelegateRequest { env: Record<string, string>; stdin: string }
/** What the shim prints and exits with. */
export interface DelegateAnswer { exitCode: number; stdout: string }

export function parseRequest(buf: Buffer): DelegateRequest {
  const headerEnd = buf.indexOf('\n\n');
  if (headerEnd < 0) throw new Error('malformed request: no end of header');
  const lines = buf.subarray(0, headerEnd).toString('utf8').split('\n');
  if (lines[0] !== MAGIC) throw new Error(`malformed request: expected ${MAGIC}, got ${JSON.stringify(lines[0]?.slice(0, 40))}`);
  const env: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf('=');
    if (i > 0) env[line.slice(0, i)] = line.slice(i + 1);
  }
  return { env, stdin: buf.subarray(headerEnd + 2).toString('utf8') };
}

export function encodeRequest(req: DelegateRequest): Buffer {
  const header = [MAGIC, ...Object.entries(req.env).map(([k, v]) => `${k}=${v.replace(/\n/g, ' ')}`)].join('\n');
  return Buffer.concat([Buffer.from(`${header}\n\n`), Buffer.from(req.stdin)]);
}

/**
 * Serves delegate requests on a unix socket (mode 0600: only root's runtime may call). A
 * stale socket file is replaced; a socket another process still answers on is an error, so
 * two kubelets never share one.
 */
export async function serveDelegate(socketPath: string, handle: (req: DelegateRequest) => Promise<DelegateAnswer>, onError: (err: Error) => void): Promise<net.Server> {
  fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o700 });
  if (fs.existsSync(socketPath)) {
    if (await answers(socketPath)) throw new Error(`another process already serves CNI requests on ${socketPath}`);
    fs.rmSync(socketPath, { force: true });
  }
  // Half-open: the shim shuts down its write side to mark the end of stdin, then waits for the answer.
  const server = net.createServer({ allowHalfOpen: true }, (conn) => {
    const chunks: Buffer[] = [];
    let size = 0;
    conn.on('data', (d: Buffer) => {
      size += d.length;
      if (size > MAX_REQUEST) {
        conn.destroy();
        onError(new Error(`a CNI request over ${MAX_REQUEST} bytes was refused`));
        return;
      }
      chunks.push(d);
    });
    conn.on('error', () => {});
    conn.on('end', () => {
      void (async () => {
        let answer: DelegateAnswer;
        try {
          answer = await handle(parseRequest(Buffer.concat(chunks)));
        } catch (err) {
          onError(err as Error);
          answer = { exitCode: 1, stdout: JSON.stringify({ cniVersion: '1.0.0', code: 5, msg: `kubelet-ts cni-exec: ${(err as Error).message}` }) };
        }
        conn.end(`${answer.exitCode}\n${answer.stdout}`);
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  fs.chmodSync(socketPath, 0o600);
  return server;
}

function answers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect(socketPath);
    const t = setTimeout(() => {
      c.destroy();
      resolve(false);
    }, 500);
    c.on('connect', () => {
      clearTimeout(t);
      c.destroy();
      resolve(true);
    });
    c.on('error', () => {
      clearTimeout(t);
      resolve(false);
    });
  });
}
