import { randomBytes } from 'node:crypto';
import https from 'node:https';
import tls from 'node:tls';

/**
 * Direct requests to a kubelet's main port, as the API server or metrics-server make them: TLS
 * without verifying the kubelet's certificate (the API server does not either), authenticated
 * by a client certificate or a bearer token, or by nothing.
 */
export interface KubeletCredentials {
  token?: string;
  cert?: Buffer | string;
  key?: Buffer | string;
}

export function kubeletRequest(
  port: number,
  path: string,
  opts: KubeletCredentials & { method?: string; headers?: Record<string, string>; timeoutMs?: number; body?: string } = {},
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'GET',
        rejectUnauthorized: false,
        ...(opts.cert ? { cert: opts.cert, key: opts.key } : {}),
        headers: { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...opts.headers },
        timeout: opts.timeoutMs ?? 15_000,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${opts.method ?? 'GET'} ${path} timed out`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** What a WebSocket exec session of the `v4.channel.k8s.io` protocol produced, by channel. */
export interface ChannelSession {
  /** The handshake's status line and headers. */
  status: number;
  protocol: string | undefined;
  /** The response body when the handshake was refused. */
  refusal: string;
  stdout: string;
  stderr: string;
  /** Channel 3: the Status JSON of the command's end. */
  error: string;
}

/**
 * Opens a WebSocket on the kubelet's main port (`GET path` with Upgrade: websocket and the
 * given subprotocols), reads binary frames until the server closes, and splits them by their
 * channel byte (1 stdout, 2 stderr, 3 error), as kubectl's v4 WebSocket client does. A client
 * written here, not a library: the test checks the kubelet proxies the bytes untouched.
 */
export function websocketChannels(port: number, path: string, creds: KubeletCredentials & { protocols: string[]; timeoutMs?: number }): Promise<ChannelSession> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...(creds.cert ? { cert: creds.cert, key: creds.key } : {}) });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`websocket ${path}: no end within ${creds.timeoutMs ?? 20_000} ms`));
    }, creds.timeoutMs ?? 20_000);
    const session: ChannelSession = { status: 0, protocol: undefined, refusal: '', stdout: '', stderr: '', error: '' };
    let buf = Buffer.alloc(0);
    let headDone = false;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(session);
    };
    socket.on('secureConnect', () => {
      const lines = [
        `GET ${path} HTTP/1.1`,
        'Host: 127.0.0.1',
        'Connection: Upgrade',
        'Upgrade: websocket',
        'Sec-WebSocket-Version: 13',
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
        `Sec-WebSocket-Protocol: ${creds.protocols.join(', ')}`,
        ...(creds.token ? [`Authorization: Bearer ${creds.token}`] : []),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (!headDone) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1').split('\r\n');
        session.status = Number(head[0]!.split(' ')[1]);
        session.protocol = head.find((h) => /^sec-websocket-protocol:/i.test(h))?.split(':')[1]?.trim();
        buf = buf.subarray(end + 4);
        headDone = true;
        if (session.status !== 101) {
          session.refusal = buf.toString('utf8');
          return;
        }
      }
      if (session.status !== 101) {
        session.refusal += d.toString('utf8');
        return;
      }
      // Server frames are unmasked: FIN/opcode, length (7, 16 or 64 bit), payload.
      for (;;) {
        if (buf.length < 2) return;
        const opcode = buf[0]! & 0x0f;
        let len = buf[1]! & 0x7f;
        let off = 2;
        if (len === 126) {
          if (buf.length < 4) return;
          len = buf.readUInt16BE(2);
          off = 4;
        } else if (len === 127) {
          if (buf.length < 10) return;
          len = Number(buf.readBigUInt64BE(2));
          off = 10;
        }
        if (buf.length < off + len) return;
        const payload = buf.subarray(off, off + len);
        buf = buf.subarray(off + len);
        if (opcode === 8) return finish();
        if ((opcode === 1 || opcode === 2) && payload.length > 0) {
          const text = payload.subarray(1).toString('utf8');
          if (payload[0] === 1) session.stdout += text;
          else if (payload[0] === 2) session.stderr += text;
          else if (payload[0] === 3) session.error += text;
        }
      }
    });
    socket.on('end', finish);
    socket.on('close', finish);
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}
