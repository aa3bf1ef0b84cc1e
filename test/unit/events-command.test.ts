/**
 * `kubelet-ts events -o json|yaml` (and --json, kept): the events as objects, listed and
 * followed, against a fake local kubelet on a unix socket.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { eventsCommand, EVENTS_USAGE } from '../../core/commands/events.ts';
import type { KubeletEvent } from '../../core/events/event-recorder.ts';
import { waitFor } from '../support/wait-for.ts';
import { TextSink } from '../support/text-sink.ts';

function event(seq: number, namespace: string, reason: string): KubeletEvent {
  return {
    seq, name: `web.${seq}`, namespace, involvedObject: { kind: 'Pod', name: 'web', namespace, uid: `u${seq}` },
    type: 'Normal', reason, message: `${reason} it`, count: 1,
    firstTimestamp: '2026-11-29T09:00:00Z', lastTimestamp: '2026-11-29T09:00:00Z', source: { component: 'kubelet', host: 'node-a' },
  };
}

const EVENTS = [event(1, 'default', 'Pulled'), event(2, 'kube-system', 'Started')];

describe('kubelet-ts events -o', function () {
  let dir: string;
  let server: http.Server;
  let socketPath: string;
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-events-cmd-'));
    socketPath = path.join(dir, 'kubelet-ts.sock');
    server = http.createServer((req, res) => {
      if (req.url === '/debug/events') return void res.end(JSON.stringify({ items: EVENTS }));
      // A follow: each event one JSON line, then the stream stays open.
      res.write(EVENTS.map((e) => `${JSON.stringify(e)}\n`).join(''));
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await fs.rm(dir, { recursive: true, force: true });
  });

  const run = async (argv: string[], signal?: AbortSignal, out = new TextSink()) => {
    const err = new TextSink();
    const code = await eventsCommand(argv, { socketPath, stdout: out, stderr: err, ...(signal ? { signal } : {}) });
    return { code, out: out.text, err: err.text };
  };

  it('-o json prints the events as --json does; -o yaml the same objects; -n still filters', async function () {
    const json = await run(['-o', 'json']);
    assert.deepEqual([json.code, json.err], [0, '']);
    assert.deepEqual(JSON.parse(json.out), EVENTS);
    assert.deepEqual(await run(['--json']), json);
    assert.deepEqual(await run(['--output=json', '--json']), json);
    const y = await run(['-o', 'yaml', '-n', 'kube-system']);
    assert.equal(y.code, 0, y.err);
    assert.deepEqual(yaml.load(y.out), [EVENTS[1]]);
  });

  it('followed (-w): -o json one line per event, -o yaml one document per event', async function () {
    for (const [o, parse] of [['json', (t: string) => t.trimEnd().split('\n').map((l) => JSON.parse(l))], ['yaml', (t: string) => yaml.loadAll(t)]] as const) {
      const ac = new AbortController();
      const out = new TextSink();
      const done = run(['-w', '-o', o], ac.signal, out);
      await waitFor(`both events printed as ${o}`, () => (o === 'json' ? out.text.split('\n').length > 2 : out.text.split('---').length > 2), 5000, 20);
      ac.abort();
      assert.equal((await done).code, 0);
      assert.deepEqual(parse(out.text), EVENTS, o);
    }
  });

  it('a format it does not print, or --json with -o yaml, exits 2 naming them, with the usage', async function () {
    assert.deepEqual(await run(['-o', 'wide']), { code: 2, out: '', err: `kubelet-ts events: --output: 'wide' is not a format; allowed: json, yaml\n\n${EVENTS_USAGE}` });
    assert.deepEqual(await run(['--json', '-o', 'yaml']), { code: 2, out: '', err: `kubelet-ts events: --json and -o yaml exclude each other\n\n${EVENTS_USAGE}` });
    assert.match(EVENTS_USAGE, /\n {2}-o, --output FORMAT {6}json or yaml/);
  });
});
