import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { HpackDecoder, HpackError, encodeLiterals } from '../../core/util/hpack.ts';
import { MAX_HEADER_BLOCK_BYTES, serveHttp2OnUnixSocket, withServableAuthority } from '../../core/util/h2-authority.ts';
import { unary } from 'kubelet-ts';
import { loadDevicePluginProtos } from '../../plugins/device-plugins/protos.ts';

/**
 * gRPC servers on unix sockets for Go clients: Go's gRPC names the socket path as the request
 * authority, which Node's HTTP/2 refuses (the stream is reset). serveHttp2OnUnixSocket re-encodes
 * request headers (HPACK) with `localhost` instead; the HPACK decoder is checked against RFC
 * 7541's examples.
 */

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('HPACK and unix socket authorities', function () {
  let dir: string;
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-h2a-'));
  });
  after(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('decodes RFC 7541 C.4 (requests with Huffman coding), its dynamic table carried from block to block', function () {
    const d = new HpackDecoder();
    assert.deepEqual(d.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff')), [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']]);
    assert.deepEqual(d.decode(hex('8286 84be 5886 a8eb 1064 9cbf')), [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com'], ['cache-control', 'no-cache']]);
    assert.deepEqual(d.decode(hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf')), [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value']]);
  });

  it('refuses what is malformed or unbounded, and what it encodes decodes back', function () {
    assert.throws(() => new HpackDecoder().decode(hex('be')), HpackError, 'an index beyond the table');
    assert.throws(() => new HpackDecoder().decode(hex('3fe1ffffff0f')), HpackError, 'a table size beyond its bound');
    assert.throws(() => new HpackDecoder().decode(hex('41 8c f1e3')), HpackError, 'a truncated string');
    const headers: Array<[string, string]> = [[':method', 'POST'], [':path', '/v1beta1.Registration/Register'], [':authority', 'localhost'], ['x-custom', 'value with spaces']];
    assert.deepEqual(new HpackDecoder().decode(encodeLiterals(headers)), headers);
  });

  it('puts localhost where an authority is a socket path or missing, and leaves a valid one', function () {
    assert.deepEqual(withServableAuthority([[':method', 'POST'], [':authority', '/var/lib/kubelet/device-plugins/kubelet.sock'], [':path', '/x']]), [[':method', 'POST'], [':authority', 'localhost'], [':path', '/x']]);
    assert.deepEqual(withServableAuthority([[':method', 'POST'], [':path', '/x'], ['te', 'trailers']]), [[':method', 'POST'], [':path', '/x'], [':authority', 'localhost'], ['te', 'trailers']]);
    assert.deepEqual(withServableAuthority([[':method', 'POST'], [':authority', 'localhost:1234']]), [[':method', 'POST'], [':authority', 'localhost:1234']]);
  });

  it('a client naming the socket path as authority is reset by a plain grpc-js server on the socket, and answered through serveHttp2OnUnixSocket', async function () {
    const { Registration } = loadDevicePluginProtos();
    const call = async (socket: string) => {
      const c = new Registration(`unix:${socket}`, grpc.credentials.createInsecure(), { 'grpc.default_authority': socket });
      try {
        await unary(c, 'Register', { version: 'v1beta1' }, 5000);
        return 'answered';
      } catch (err) {
        return (err as Error).message;
      } finally {
        c.close();
      }
    };
    const plain = new grpc.Server();
    plain.addService(Registration.service, { Register: (_c: unknown, cb: grpc.sendUnaryData<object>) => cb(null, {}) });
    const plainSocket = path.join(dir, 'plain.sock');
    await new Promise<void>((resolve, reject) => plain.bindAsync(`unix:${plainSocket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
    assert.match(await call(plainSocket), /RST_STREAM/, 'Node\'s HTTP/2 refuses the authority');
    plain.forceShutdown();

    const server = new grpc.Server();
    let versions: string[] = [];
    server.addService(Registration.service, { Register: (c: grpc.ServerUnaryCall<{ version: string }, object>, cb: grpc.sendUnaryData<object>) => {
      versions.push(c.request.version);
      cb(null, {});
    } });
    const socket = path.join(dir, 'fixed.sock');
    const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    const listener = await serveHttp2OnUnixSocket(socket, (conn) => injector.injectConnection(conn), { mode: 0o600 });
    try {
      assert.equal(await call(socket), 'answered');
      assert.equal(await call(socket), 'answered', 'again (the dynamic table across requests)');
      assert.deepEqual(versions, ['v1beta1', 'v1beta1']);
      assert.equal((await fs.stat(socket)).mode & 0o777, 0o600);
      // A client sending an endless header block is cut off; the server goes on.
      const raw = net.connect(socket);
      raw.on('error', () => {});
      raw.resume();
      await new Promise((r) => raw.once('connect', r));
      const closed = new Promise((r) => raw.once('close', r));
      raw.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
      raw.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]));
      const chunk = Buffer.alloc(16384, 0x41);
      const head = (type: number, flags: number) => Buffer.from([0x00, 0x40, 0x00, type, flags, 0, 0, 0, 1]);
      raw.write(Buffer.concat([head(1, 0), chunk]));
      for (let sent = 16384; sent <= MAX_HEADER_BLOCK_BYTES; sent += 16384) raw.write(Buffer.concat([head(9, 0), chunk]));
      await closed;
      versions = [];
      assert.equal(await call(socket), 'answered');
    } finally {
      await listener.close();
      injector.destroy();
      server.forceShutdown();
    }
    await assert.rejects(fs.stat(socket), 'the socket is removed at close');
  });
});
