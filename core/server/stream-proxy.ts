/**
 * Proxies an upgraded connection (exec, attach, port-forward) to the runtime's streaming server,
 * as upstream's kubelet does with UpgradeAwareHandler: the client's request is sent on to the
 * URL the runtime returned (its path, the client's method and headers, without the client's
 * credentials), then bytes are piped both ways untouched. The kubelet never parses SPDY or
 * WebSocket frames, so every protocol version kubectl and the runtime agree on works, and a
 * refusal by the runtime (a 403 for a subprotocol it lacks, which makes kubectl fall back from
 * WebSocket to SPDY) reaches the client as the runtime wrote it.
 *
 * Each side has the idle timeout (streamingConnectionIdleTimeout); when either side closes or
 * fails, both are destroyed, so the runtime's stream (and with it the exec session's stdin and
 * terminal) is released when a client goes away. Backpressure is per connection (pipe), so a
 * slow client only slows its own stream.
 */
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { Logger } from '../logger.ts';
import { WEBSOCKET_TOKEN_PROTOCOL } from './authn.ts';

/** How long connecting to the runtime's streaming server may take. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Request headers never sent on: the client's credentials are for the kubelet, not the runtime. */
const DROPPED_HEADERS = new Set(['host', 'authorization', 'proxy-authorization', 'cookie']);

/** Writes a complete HTTP/1.1 response on a raw socket (an upgrade request refused) and closes it. */
export function writeRawResponse(socket: Duplex, status: number, body: string, headers: Record<string, string> = {}): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const text = body.endsWith('\n') ? body : `${body}\n`;
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n${extra}\r\n${text}`,
  );
  // A client that never reads its refusal must not hold the socket.
  setTimeout(() => socket.destroy(), 5000).unref();
}

/** The request head to send to the runtime: the client's method and headers, the runtime's path. */
export function upstreamRequestHead(req: IncomingMessage, target: URL): string {
  const lines = [`${req.method ?? 'GET'} ${target.pathname}${target.search} HTTP/1.1`, `Host: ${target.host}`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    let value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (DROPPED_HEADERS.has(lower)) continue;
    if (lower === 'sec-websocket-protocol') {
      // The token subprotocol authenticated the client here; the runtime must not see it.
      value = value.split(',').map((s) => s.trim()).filter((p) => p && !p.startsWith(WEBSOCKET_TOKEN_PROTOCOL)).join(', ');
      if (!value) continue;
    }
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) continue;
    lines.push(`${name}: ${value}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

export interface ProxyOptions {
  /** Close both sides after this long without traffic on either. */
  idleTimeoutMs: number;
  logger: Logger;
  /** Called once when both sides are closed. */
  onClose?: () => void;
}

/** Connects to `target` and pipes the upgraded client connection to it and back. */
export function proxyUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, target: URL, opts: ProxyOptions): void {
  const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const backend: net.Socket = target.protocol === 'https:'
    ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host })
    : net.connect({ host, port });
  let connected = false;
  let done = false;
  const finish = (why: string, err?: Error) => {
    if (done) return;
    done = true;
    opts.logger.debug({ path: req.url?.split('?')[0], why, ...(err ? { err: err.message } : {}) }, 'stream closed');
    client.destroy();
    backend.destroy();
    opts.onClose?.();
  };
  backend.setTimeout(CONNECT_TIMEOUT_MS, () => {
    if (!connected) writeRawResponse(client, 500, `error dialing the container runtime's streaming server ${target.host}: no connection within ${CONNECT_TIMEOUT_MS / 1000}s`);
    finish(connected ? 'idle' : 'connect timeout');
  });
  backend.on('error', (err) => {
    if (!connected) writeRawResponse(client, 500, `error dialing the container runtime's streaming server ${target.host}: ${err.message}`);
    finish('runtime side failed', err);
  });
  client.on('error', (err) => finish('client side failed', err));
  client.on('close', () => finish('client closed'));
  backend.on('close', () => {
    // Before the connection: the refusal written above still has to reach the client.
    if (connected) finish('runtime closed');
    else if (!done) {
      done = true;
      opts.onClose?.();
    }
  });
  backend.once(target.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
    connected = true;
    backend.setNoDelay(true);
    if (client instanceof net.Socket) client.setNoDelay(true);
    backend.setTimeout(opts.idleTimeoutMs);
    (client as net.Socket).setTimeout?.(opts.idleTimeoutMs, () => finish('idle'));
    backend.write(upstreamRequestHead(req, target));
    if (head.length > 0) backend.write(head);
    client.pipe(backend);
    backend.pipe(client);
  });
}
