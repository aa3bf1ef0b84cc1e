/**
 * HTTP/2 over a unix socket for clients that name the socket path as the request's authority.
 * Go's gRPC (and so every device plugin and podresources client built with it, when it dials a
 * plain socket path) sends `:authority: /var/lib/kubelet/device-plugins/kubelet.sock`; Node's
 * HTTP/2 (nghttp2) refuses an authority with `/` and resets the stream (PROTOCOL_ERROR), so a
 * Node gRPC server could not serve them. Upstream's own clients moved to `localhost` for unix
 * sockets; old and third-party ones did not.
 *
 * `serveHttp2OnUnixSocket` listens on the socket itself and hands each connection on (to a gRPC
 * server's connection injector) through a filter that re-encodes each request header block
 * the client sends (HPACK, hpack.ts), with an authority nghttp2 refuses (or none) replaced by
 * `localhost`. Everything else passes through byte for byte. The filter is bounded: a header
 * block over MAX_HEADER_BLOCK_BYTES or a malformed one ends the connection.
 */
import fs from 'node:fs/promises';
import net from 'node:net';
import { Duplex } from 'node:stream';
import { HpackDecoder, encodeLiterals, type HeaderList } from './hpack.ts';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const FRAME_HEADER = 9;
const HEADERS = 0x1;
const CONTINUATION = 0x9;
const PUSH_PROMISE = 0x5;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;
/** The largest frame payload taken from a client (its server can allow 16 MiB; gRPC servers allow 16 KiB by default). */
const MAX_FRAME_PAYLOAD = 1 << 24;
/** The largest request header block (all its CONTINUATION frames) re-encoded. */
export const MAX_HEADER_BLOCK_BYTES = 256 * 1024;
/** Frames the filter writes are at most this long (HTTP/2's default SETTINGS_MAX_FRAME_SIZE, which every peer takes). */
const OUT_FRAME_PAYLOAD = 16384;

/** What nghttp2 takes in an authority (RFC 3986 reg-name, IP literals, port, and `%` escapes). */
const VALID_AUTHORITY = /^[A-Za-z0-9\-._~!$&'()*+,;=:%[\]@]+$/;

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(FRAME_HEADER);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

/** The request headers as nghttp2 takes them: a refused or missing authority is `localhost`. */
export function withServableAuthority(headers: HeaderList): HeaderList {
  const isRequest = headers.some(([n]) => n === ':method');
  if (!isRequest) return headers;
  let seen = false;
  const out: HeaderList = headers.map(([n, v]) => {
    if (n !== ':authority') return [n, v];
    seen = true;
    return [n, VALID_AUTHORITY.test(v) ? v : 'localhost'];
  });
  if (!seen && !headers.some(([n]) => n === 'host')) {
    // Pseudo-headers come first: it goes after the last of them.
    const at = out.findIndex(([n]) => !n.startsWith(':'));
    out.splice(at === -1 ? out.length : at, 0, [':authority', 'localhost']);
  }
  return out;
}

/**
 * One client connection as the server sees it: server → client bytes pass to the socket as they
 * are; client → server bytes are HTTP/2 frames, whose request header blocks are re-encoded.
 */
export class AuthorityFilter extends Duplex {
  private input: Buffer = Buffer.alloc(0);
  private prefaceDone = false;
  private readonly decoder = new HpackDecoder();
  /** A HEADERS frame waiting for its CONTINUATION frames. */
  private pending: { streamId: number; flags: number; priority: Buffer | undefined; fragments: Buffer[]; bytes: number } | undefined;

  constructor(private readonly socket: net.Socket) {
    super();
    socket.on('data', (chunk: Buffer) => {
      try {
        this.accept(chunk);
      } catch (err) {
        this.destroy(err as Error);
        socket.destroy();
      }
    });
    socket.on('end', () => this.push(null));
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
  }

  override _read(): void {
    // Data is pushed as the socket delivers it.
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.socket.write(chunk, cb);
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.socket.end(cb);
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.socket.destroy();
    cb(err);
  }

  private accept(chunk: Buffer): void {
    this.input = this.input.length ? Buffer.concat([this.input, chunk]) : chunk;
    if (!this.prefaceDone) {
      if (this.input.length < PREFACE.length) return;
      if (!this.input.subarray(0, PREFACE.length).equals(PREFACE)) throw new Error('not an HTTP/2 connection');
      this.push(this.input.subarray(0, PREFACE.length));
      this.input = this.input.subarray(PREFACE.length);
      this.prefaceDone = true;
    }
    while (this.input.length >= FRAME_HEADER) {
      const length = this.input.readUIntBE(0, 3);
      if (length > MAX_FRAME_PAYLOAD) throw new Error(`a frame of ${length} bytes`);
      if (this.input.length < FRAME_HEADER + length) return;
      const raw = this.input.subarray(0, FRAME_HEADER + length);
      this.input = this.input.subarray(FRAME_HEADER + length);
      this.frame(raw);
    }
  }

  private frame(raw: Buffer): void {
    const type = raw[3]!;
    const flags = raw[4]!;
    const streamId = raw.readUInt32BE(5) & 0x7fffffff;
    const payload = raw.subarray(FRAME_HEADER);
    if (this.pending && type !== CONTINUATION) throw new Error('a frame between HEADERS and its CONTINUATION');
    if (type === PUSH_PROMISE) throw new Error('a client sent PUSH_PROMISE');
    if (type === HEADERS) {
      let body = payload;
      let pad = 0;
      if (flags & PADDED) {
        pad = body[0] ?? 0;
        body = body.subarray(1);
      }
      let priority: Buffer | undefined;
      if (flags & PRIORITY) {
        priority = body.subarray(0, 5);
        body = body.subarray(5);
      }
      if (pad > body.length) throw new Error('HEADERS padding longer than the frame');
      body = body.subarray(0, body.length - pad);
      this.pending = { streamId, flags, priority, fragments: [body], bytes: body.length };
    } else if (type === CONTINUATION) {
      if (!this.pending || this.pending.streamId !== streamId) throw new Error('CONTINUATION without its HEADERS');
      this.pending.fragments.push(payload);
      this.pending.bytes += payload.length;
    } else {
      this.push(raw);
      return;
    }
    if (this.pending.bytes > MAX_HEADER_BLOCK_BYTES) throw new Error(`a header block over ${MAX_HEADER_BLOCK_BYTES} bytes`);
    if (!(flags & END_HEADERS)) return;
    const { streamId: id, flags: first, priority, fragments } = this.pending;
    this.pending = undefined;
    const block = encodeLiterals(withServableAuthority(this.decoder.decode(Buffer.concat(fragments))));
    const head = priority ? Buffer.concat([priority, block]) : block;
    const chunks: Buffer[] = [];
    for (let at = 0; at < head.length || chunks.length === 0; at += OUT_FRAME_PAYLOAD) chunks.push(head.subarray(at, at + OUT_FRAME_PAYLOAD));
    chunks.forEach((c, i) => {
      const last = i === chunks.length - 1 ? END_HEADERS : 0;
      this.push(i === 0 ? frame(HEADERS, (first & (END_STREAM | PRIORITY)) | last, id, c) : frame(CONTINUATION, last, id, c));
    });
  }
}

/** A listener on a unix socket handing HTTP/2 connections on; `close` stops it and removes the socket. */
export interface UnixHttp2Listener {
  close(): Promise<void>;
}

/**
 * Listens on `socketPath` (a stale socket there is replaced; the socket gets `mode`) and hands
 * each connection, filtered (AuthorityFilter), to `onConnection`: for a gRPC server, its
 * connection injector's `injectConnection` (grpc-js `server.createConnectionInjector`).
 */
export async function serveHttp2OnUnixSocket(socketPath: string, onConnection: (connection: Duplex) => void, opts: { mode?: number; maxConnections?: number } = {}): Promise<UnixHttp2Listener> {
  await fs.rm(socketPath, { force: true });
  const open = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    const filtered = new AuthorityFilter(socket);
    filtered.on('error', () => {});
    onConnection(filtered);
  });
  server.maxConnections = opts.maxConnections ?? 256;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  if (opts.mode !== undefined) await fs.chmod(socketPath, opts.mode);
  return {
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of open) s.destroy();
      });
      await fs.rm(socketPath, { force: true }).catch(() => {});
    },
  };
}
