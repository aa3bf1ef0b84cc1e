import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { CriLogParser, fixedTimestamp, parseCriLog, parseCriRecord } from '../../core/logs/cri-log.ts';
import { findTailStart, readContainerLog, type ReadLogOptions } from '../../core/logs/log-follower.ts';
import { containerLogsHandler, parsePodLogQuery } from '../../core/logs/log-routes.ts';
import { logsCommand } from '../../core/commands/logs.ts';
import { RouteTable, serveRoute } from '../../core/server/routes.ts';
import { silentLogger } from '../../core/logger.ts';
import type { ContainerRuntime, ContainerStatus } from '../../core/runtime/types.ts';
import { TextSink } from '../support/text-sink.ts';

const ts = (i: number) => `2024-05-01T10:00:${String(Math.floor(i / 1000) % 60).padStart(2, '0')}.${String(i % 1000).padStart(3, '0')}123Z`;

let dir: string;
before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cri-log-'));
});
after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function read(file: string, opts: ReadLogOptions = {}): Promise<string> {
  const out = new TextSink();
  await readContainerLog(file, opts, out);
  return out.text;
}

describe('CRI log parser', () => {
  it('parses a record: timestamp, stream, tag and content (spaces kept)', () => {
    const r = parseCriRecord(Buffer.from('2016-10-06T00:17:09.669794202Z stderr F log  content 2'))!;
    assert.equal(r.timestamp, '2016-10-06T00:17:09.669794202Z');
    assert.deepEqual(r.time, { sec: Date.parse('2016-10-06T00:17:09Z') / 1000, nsec: 669794202 });
    assert.equal(r.stream, 'stderr');
    assert.equal(r.partial, false);
    assert.equal(r.content.toString(), 'log  content 2');
    assert.equal(parseCriRecord(Buffer.from('2016-10-06T00:17:09Z stdout P:x part'))!.partial, true, 'the first `:` tag decides');
    assert.equal(parseCriRecord(Buffer.from('2016-10-06T00:17:09Z stdout F '))!.content.length, 0, 'an empty line');
  });

  it('rejects malformed records', () => {
    for (const bad of ['', 'no-timestamp stdout F x', '2016-10-06T00:17:09Z', '2016-10-06T00:17:09Z stdout', '2016-10-06T00:17:09Z stdout F', '2016-10-06T00:17:09Z stdin F x', '2016-13-06 stdout F x']) {
      assert.equal(parseCriRecord(Buffer.from(bad)), undefined, JSON.stringify(bad));
    }
  });

  it('joins partial records per stream and keeps stream and first timestamp', () => {
    const log = [
      '2024-01-01T00:00:01.1Z stdout P hello ',
      '2024-01-01T00:00:01.2Z stderr F an error',
      '2024-01-01T00:00:01.3Z stdout P big ',
      '2024-01-01T00:00:01.4Z stdout F world',
      'garbage line',
      '2024-01-01T00:00:02Z stdout F next',
      '',
    ].join('\n');
    const p = new CriLogParser();
    const entries = [...p.push(Buffer.from(log)), ...p.end()];
    assert.deepEqual(entries.map((e) => [e.stream, e.timestamp, e.log.toString(), e.complete]), [
      ['stderr', '2024-01-01T00:00:01.2Z', 'an error', true],
      ['stdout', '2024-01-01T00:00:01.1Z', 'hello big world', true],
      ['stdout', '2024-01-01T00:00:02Z', 'next', true],
    ]);
    assert.equal(p.malformed, 1);
  });

  it('handles records split across chunks, multibyte text, and an unterminated end', () => {
    const log = Buffer.from('2024-01-01T00:00:01Z stdout F grüße\n2024-01-01T00:00:02Z stdout P tail-');
    const p = new CriLogParser();
    const got = [];
    for (let i = 0; i < log.length; i += 3) got.push(...p.push(log.subarray(i, i + 3)));
    assert.deepEqual(got.map((e) => e.log.toString()), ['grüße']);
    const rest = p.end();
    assert.deepEqual(rest.map((e) => [e.log.toString(), e.complete]), [['tail-', false]]);
    assert.deepEqual(parseCriLog('2024-01-01T00:00:01Z stdout F no newline').map((e) => [e.log.toString(), e.complete]), [['no newline', false]]);
  });

  it('formats timestamps as RFC3339NanoFixed', () => {
    assert.equal(fixedTimestamp('2024-01-01T00:00:01.5Z'), '2024-01-01T00:00:01.500000000Z');
    assert.equal(fixedTimestamp('2024-01-01T00:00:01Z'), '2024-01-01T00:00:01.000000000Z');
    assert.equal(fixedTimestamp('2024-01-01T00:00:01.123456789+02:00'), '2024-01-01T00:00:01.123456789+02:00');
  });
});

describe('readContainerLog', () => {
  let big: string;
  const N = 50_000;

  before(async () => {
    big = path.join(dir, 'big.log');
    const lines: string[] = [];
    for (let i = 0; i < N; i++) {
      if (i % 1000 === 7) lines.push(`${ts(i)} stderr P part-a-${i} `, `${ts(i)} stderr F part-b-${i}`);
      else lines.push(`${ts(i)} ${i % 2 ? 'stderr' : 'stdout'} F line ${i} ${'x'.repeat(40)}`);
    }
    await fs.writeFile(big, lines.join('\n') + '\n');
  });

  it('reads the whole file', async () => {
    const text = await read(big);
    const lines = text.split('\n');
    assert.equal(lines.length, N + 1);
    assert.equal(lines[0], `line 0 ${'x'.repeat(40)}`);
    assert.equal(lines[7], 'part-a-7 part-b-7');
    assert.equal(lines[N], '');
  });

  it('tails a large file from the end: only a small part of it is read', async () => {
    const fh = await fs.open(big, 'r');
    const size = (await fh.stat()).size;
    let readBytes = 0;
    const origRead = fh.read.bind(fh);
    (fh as any).read = (buf: Buffer, off: number, len: number, pos: number) => {
      readBytes += len;
      return origRead(buf, off, len, pos);
    };
    const start = await findTailStart(fh, size, 3, 4096);
    await fh.close();
    assert.ok(readBytes <= 8192, `read ${readBytes} of ${size} bytes`);
    const tailText = (await fs.readFile(big)).subarray(start).toString();
    assert.equal(tailText.split('\n').length, 4);

    const text = await read(big, { tailLines: 3 });
    assert.deepEqual(text.split('\n'), [N - 3, N - 2, N - 1].map((i) => `line ${i} ${'x'.repeat(40)}`).concat(['']));
    assert.equal(await read(big, { tailLines: 0 }), '');
  });

  it('counts a joined partial line as one line when tailing', async () => {
    const f = path.join(dir, 'partial-tail.log');
    await fs.writeFile(f, ['2024-01-01T00:00:01Z stdout F one', '2024-01-01T00:00:02Z stdout P tw', '2024-01-01T00:00:02Z stdout P o-', '2024-01-01T00:00:02Z stdout F two', 'junk', '2024-01-01T00:00:03Z stdout F three', ''].join('\n'));
    assert.equal(await read(f, { tailLines: 2 }), 'two-two\nthree\n');
    assert.equal(await read(f, { tailLines: 1 }), 'three\n');
    assert.equal(await read(f, { tailLines: 10 }), 'one\ntwo-two\nthree\n');
    const small = path.join(dir, 'one-line.log');
    await fs.writeFile(small, '2024-01-01T00:00:01Z stdout F only');
    assert.equal(await read(small, { tailLines: 1 }), 'only');
  });

  it('stops after limitBytes, cutting the last line', async () => {
    assert.equal(await read(big, { limitBytes: 10 }), 'line 0 xxx');
    assert.equal(Buffer.byteLength(await read(big, { limitBytes: 100_000 })), 100_000);
  });

  it('prefixes timestamps and filters by sinceTime', async () => {
    const f = path.join(dir, 'ts.log');
    await fs.writeFile(f, '2024-01-01T00:00:01.5Z stdout F a\n2024-01-01T00:00:02.000000001Z stderr F b\n2024-01-01T00:00:03Z stdout F c\n');
    assert.equal(await read(f, { timestamps: true, tailLines: 2 }), '2024-01-01T00:00:02.000000001Z b\n2024-01-01T00:00:03.000000000Z c\n');
    assert.equal(await read(f, { sinceTime: '2024-01-01T00:00:02Z' }), 'b\nc\n');
    assert.equal(await read(f, { sinceTime: new Date('2024-01-01T00:00:02.5Z') }), 'c\n');
    assert.equal(await read(f, { timestamps: true, limitBytes: 12 }), '2024-01-01T0');
  });

  it('follows appended lines (also a record written in pieces) and ends on abort', async () => {
    const f = path.join(dir, 'follow.log');
    await fs.writeFile(f, '2024-01-01T00:00:01Z stdout F first\n');
    const out = new PassThrough();
    let text = '';
    out.on('data', (d) => (text += d));
    const ac = new AbortController();
    const done = readContainerLog(f, { follow: true, signal: ac.signal, pollIntervalMs: 100 }, out);
    const waitText = async (want: string) => {
      for (let i = 0; i < 250 && !text.includes(want); i++) await sleep(20);
      assert.ok(text.includes(want), `got ${JSON.stringify(text)}`);
    };
    await waitText('first\n');
    await fs.appendFile(f, '2024-01-01T00:00:02Z stdout F second\n');
    await waitText('second\n');
    await fs.appendFile(f, '2024-01-01T00:00:03Z stdout P thi');
    await sleep(150);
    assert.ok(!text.includes('thi'), 'an incomplete record is not written');
    await fs.appendFile(f, 'rd-\n2024-01-01T00:00:03Z stdout F end\n');
    await waitText('third-end\n');
    ac.abort();
    await done;
    assert.equal(text, 'first\nsecond\nthird-end\n');
  });

  it('follows until isRunning says the container stopped, after draining, and reopens a rotated file', async () => {
    const f = path.join(dir, 'follow2.log');
    await fs.writeFile(f, '2024-01-01T00:00:01Z stdout F a\n');
    let running = true;
    const out = new TextSink();
    const done = readContainerLog(f, { follow: true, tailLines: 0, isRunning: () => running, pollIntervalMs: 50 }, out);
    await sleep(100);
    // Rotation: the file is replaced by a new one under the same path.
    await fs.writeFile(`${f}.tmp`, '2024-01-01T00:00:02Z stdout F b\n');
    await fs.rename(`${f}.tmp`, f);
    for (let i = 0; i < 250 && !out.text.includes('b'); i++) await sleep(20);
    await fs.appendFile(f, '2024-01-01T00:00:03Z stdout F last words\n');
    running = false;
    await done;
    assert.equal(out.text, 'b\nlast words\n');
  });

  it('reads a rotated-away file to its end before the new one, though the runtime writes to it after the new one appeared', async () => {
    const f = path.join(dir, 'follow3.log');
    await fs.writeFile(f, '2024-01-01T00:00:01Z stdout F 1\n');
    let running = true;
    const out = new TextSink();
    const done = readContainerLog(f, { follow: true, isRunning: () => running, pollIntervalMs: 20 }, out);
    for (let i = 0; i < 100 && !out.text.includes('1'); i++) await sleep(10);
    // As the kubelet and containerd rotate: rename, the new (empty) file opened, the old
    // writer still writing for a while, then the writer swapped to the new file.
    const old = await fs.open(f, 'a');
    await fs.rename(f, `${f}.20240101-000000`);
    await fs.writeFile(f, '');
    await sleep(60); // the follower has seen the new file by now
    await old.appendFile('2024-01-01T00:00:02Z stdout F 2\n');
    await old.close();
    await sleep(60);
    await fs.appendFile(f, '2024-01-01T00:00:03Z stdout F 3\n');
    for (let i = 0; i < 100 && !out.text.includes('3'); i++) await sleep(10);
    running = false;
    await done;
    assert.equal(out.text, '1\n2\n3\n');
  });
});

describe('containerLogs route and logs command (fake runtime)', () => {
  // The routes as the kubelet's main port and local socket serve them: TCP for the requests
  // here, the socket for `kubelet-ts logs`.
  let servers: http.Server[];
  let port: number;
  let socketPath: string;
  let logDir: string;
  const uid = 'uid-1';
  const pod: V1Pod = {
    metadata: { name: 'web-node1', namespace: 'ns1', uid },
    spec: { nodeName: 'node1', containers: [{ name: 'main', image: 'x' }, { name: 'side', image: 'x' }] },
    status: {
      containerStatuses: [
        { name: 'main', image: 'x', imageID: '', ready: true, restartCount: 1, containerID: 'containerd://c2', state: { running: { startedAt: new Date() } }, lastState: { terminated: { exitCode: 1, containerID: 'containerd://c1' } } },
        { name: 'side', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ErrImagePull' } } },
      ],
    },
  };
  const status = (id: string, file: string, state: ContainerStatus['state']) => ({ id, logPath: file, state, annotations: {} }) as unknown as ContainerStatus;

  before(async () => {
    logDir = path.join(dir, 'pods', `ns1_web-node1_${uid}`);
    await fs.mkdir(path.join(logDir, 'main'), { recursive: true });
    await fs.writeFile(path.join(logDir, 'main', '0.log'), '2024-01-01T00:00:01Z stdout F old-1\n2024-01-01T00:00:02Z stderr F old-2\n');
    await fs.writeFile(path.join(logDir, 'main', '1.log'), '2024-01-01T00:00:03Z stdout F new-1\n2024-01-01T00:00:04Z stdout F new-2\n2024-01-01T00:00:05Z stdout F new-3\n');
    const runtime = {
      async containerStatus(id: string) {
        if (id === 'c1') return status('c1', path.join(logDir, 'main', '0.log'), 'CONTAINER_EXITED');
        if (id === 'c2') return status('c2', path.join(logDir, 'main', '1.log'), 'CONTAINER_EXITED');
        throw new Error('unknown');
      },
      async listContainers() {
        return [];
      },
    } as unknown as ContainerRuntime;
    const table = new RouteTable()
      .add('/pods', () => ({ kind: 'PodList', apiVersion: 'v1', items: [pod] }))
      .add('/containerLogs/', containerLogsHandler({ pods: () => [pod], runtime: () => runtime, logDir: () => logDir }));
    const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://kubelet');
      const route = table.find(url.pathname);
      if (route) void serveRoute(route, req, res, url, silentLogger());
      else res.writeHead(404).end();
    };
    socketPath = path.join(dir, 'kubelet-ts.sock');
    const tcp = http.createServer(handle);
    const local = http.createServer(handle);
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => local.listen(socketPath, resolve));
    servers = [tcp, local];
    port = (tcp.address() as { port: number }).port;
  });
  after(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
  });

  const get = (p: string) =>
    new Promise<{ status: number; body: string; type: string }>((resolve, reject) => {
      http.get(`http://127.0.0.1:${port}${p}`, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, body, type: String(res.headers['content-type']) }));
      }).on('error', reject);
    });

  it('serves current and previous logs with options', async () => {
    const cur = await get('/containerLogs/ns1/web-node1/main');
    assert.equal(cur.status, 200);
    assert.match(cur.type, /^text\/plain/);
    assert.equal(cur.body, 'new-1\nnew-2\nnew-3\n');
    assert.equal((await get('/containerLogs/ns1/web-node1/main?tailLines=1&timestamps=true')).body, '2024-01-01T00:00:05.000000000Z new-3\n');
    assert.equal((await get('/containerLogs/ns1/web-node1/main?tail=all')).body, 'new-1\nnew-2\nnew-3\n');
    assert.equal((await get('/containerLogs/ns1/web-node1/main?previous=true')).body, 'old-1\nold-2\n');
    assert.equal((await get('/containerLogs/ns1/web-node1/main?limitBytes=7')).body, 'new-1\nn');
    assert.equal((await get('/containerLogs/ns1/web-node1/main?sinceTime=2024-01-01T00:00:04Z')).body, 'new-2\nnew-3\n');
    // A follow of a stopped container ends after the file is drained.
    assert.equal((await get('/containerLogs/ns1/web-node1/main?follow=true&tailLines=2')).body, 'new-2\nnew-3\n');
  });

  it('answers errors as upstream does', async () => {
    assert.deepEqual(await get('/containerLogs/ns1/nope/main').then((r) => [r.status, r.body]), [404, 'pod "nope" does not exist\n']);
    assert.deepEqual(await get('/containerLogs/ns2/web-node1/main').then((r) => r.status), 404);
    assert.deepEqual(await get('/containerLogs/ns1/web-node1/other').then((r) => [r.status, r.body]), [404, 'container "other" not found in pod "web-node1"\n']);
    assert.deepEqual(await get('/containerLogs/ns1/web-node1/side').then((r) => [r.status, r.body]), [400, 'container "side" in pod "web-node1" is waiting to start: image can\'t be pulled\n']);
    assert.deepEqual(await get('/containerLogs/ns1/web-node1/side?previous=1').then((r) => [r.status, r.body]), [400, 'previous terminated container "side" in pod "web-node1" not found\n']);
    assert.equal((await get('/containerLogs/ns1/web-node1/main?tailLines=abc')).status, 400);
    assert.equal((await get('/containerLogs/ns1/web-node1/main?tailLines=-1')).status, 422);
    assert.equal((await get('/containerLogs/ns1/web-node1/main?limitBytes=0')).status, 422);
    assert.equal((await get('/containerLogs/ns1/web-node1/main?sinceSeconds=1&sinceTime=2024-01-01T00:00:00Z')).status, 422);
    assert.equal((await get('/containerLogs/ns1/web-node1')).status, 400);
  });

  it('parses query booleans as the apimachinery codec does', () => {
    const q = parsePodLogQuery(new URLSearchParams('follow=0&previous=False&timestamps=1'));
    assert.deepEqual(q, { follow: false, previous: false, timestamps: true });
  });

  it('logsCommand resolves a static pod by manifest name and prints the log', async () => {
    const out = new TextSink();
    const err = new TextSink();
    assert.equal(await logsCommand(['web', '-c', 'main', '--tail', '2'], { socketPath, stdout: out, stderr: err }), 0, err.text);
    assert.equal(out.text, 'new-2\nnew-3\n');
    const out2 = new TextSink();
    assert.equal(await logsCommand(['web-node1', '-n', 'ns1', '--previous', '--timestamps'], { socketPath, stdout: out2, stderr: err }), 0, err.text);
    assert.equal(out2.text, '2024-01-01T00:00:01.000000000Z old-1\n2024-01-01T00:00:02.000000000Z old-2\n');
    assert.match(err.text, /Defaulted container "main" out of: main, side/);
  });

  it('logsCommand fails clearly for an unknown pod or container, or an unreachable kubelet', async () => {
    const err = new TextSink();
    assert.equal(await logsCommand(['nope'], { socketPath, stdout: new TextSink(), stderr: err }), 1);
    assert.match(err.text, /pods "nope" not found/);
    const err2 = new TextSink();
    assert.equal(await logsCommand(['web', '-c', 'other'], { socketPath, stdout: new TextSink(), stderr: err2 }), 1);
    assert.match(err2.text, /container "other" is not valid for pod "web-node1"/);
    const err3 = new TextSink();
    assert.equal(await logsCommand(['web', '-c', 'side'], { socketPath, stdout: new TextSink(), stderr: err3 }), 1);
    assert.match(err3.text, /Error from server \(BadRequest\): container "side" in pod "web-node1" is waiting to start/);
    const err4 = new TextSink();
    const absent = path.join(dir, 'absent.sock');
    assert.equal(await logsCommand(['web'], { socketPath: absent, stdout: new TextSink(), stderr: err4 }), 1);
    assert.equal(err4.text, `kubelet-ts logs: cannot reach the kubelet at ${absent} (no socket there); is it running with this root dir? (--root-dir DIR)\n`);
    const err5 = new TextSink();
    assert.equal(await logsCommand(['web', '--root-dir', path.join(dir, 'elsewhere')], { socketPath, stdout: new TextSink(), stderr: err5 }), 1);
    assert.match(err5.text, /cannot reach the kubelet at .*elsewhere\/kubelet-ts\.sock/, '--root-dir names the kubelet');
    assert.equal(await logsCommand([], { socketPath, stdout: new TextSink(), stderr: new TextSink() }), 2);
  });
});
