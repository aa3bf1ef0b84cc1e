import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { StaticPodUrlSource } from '../../core/sources/static-url.ts';
import { waitFor } from '../support/wait-for.ts';
import { captureLogger } from '../support/capture-logger.ts';

const pod = (name: string, image = 'busybox:1.36') => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image }] } });

describe('StaticPodUrlSource (--manifest-url)', function () {
  this.timeout(10_000);
  let server: http.Server;
  let answer: { status: number; body: string; headers?: Record<string, string> };
  let lastHeaders: http.IncomingHttpHeaders = {};
  let url: string;
  const sources: StaticPodUrlSource[] = [];

  beforeEach(async () => {
    answer = { status: 200, body: '' };
    server = http.createServer((req, res) => {
      lastHeaders = req.headers;
      res.writeHead(answer.status, answer.headers ?? { 'content-type': 'application/yaml' }).end(answer.body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
  });
  afterEach(async () => {
    await Promise.all(sources.splice(0).map((s) => s.stop()));
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  function start(logger = captureLogger<{ msg: string; err?: string; level: number }>()) {
    const emissions: V1Pod[][] = [];
    const s = new StaticPodUrlSource({ url, headers: { 'X-Token': ['t1'] }, nodeName: 'n1', periodMs: 1000, logger: logger.logger });
    sources.push(s);
    return { s, emissions, lines: logger.lines, started: s.start((pods) => emissions.push(pods)) };
  }

  it('serves one Pod or a PodList as static pods (source http, UID hashed with url:), with the configured headers', async function () {
    answer.body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [pod('a'), { metadata: { name: 'b' }, spec: { containers: [{ name: 'c', image: 'x:1' }] } }] });
    const { emissions, started } = start();
    await started;
    assert.equal(lastHeaders['x-token'], 't1');
    const names = emissions[0]!.map((p) => p.metadata!.name).sort();
    assert.deepEqual(names, ['a-n1', 'b-n1']);
    for (const p of emissions[0]!) {
      assert.equal(p.metadata!.annotations!['kubernetes.io/config.source'], 'http');
      assert.equal(p.metadata!.annotations!['kubernetes.io/config.hash'], p.metadata!.uid);
    }
  });

  it('keeps the last good set through errors, bad answers and timeouts, with one line per problem', async function () {
    answer.body = `apiVersion: v1\nkind: Pod\nmetadata: {name: one}\nspec: {containers: [{name: c, image: x:1}]}\n`;
    const { emissions, lines, started } = start();
    await started;
    assert.equal(emissions.length, 1);
    answer = { status: 500, body: 'boom' };
    await sleep(2500);
    answer = { status: 200, body: 'kind: Pod\nmetadata: [oops' };
    await sleep(2200);
    assert.equal(emissions.length, 1, 'nothing emitted while the URL fails');
    const warnings = lines.filter((l) => l.level === 40);
    assert.deepEqual(warnings.map((l) => l.err?.replace(/:\d+\/pods/, ':PORT/pods').split(': ').slice(0, 2).join(': ')), [
      'static pod manifest URL http://127.0.0.1:PORT/pods: HTTP 500',
      'static pod manifest URL http://127.0.0.1:PORT/pods: not valid YAML or JSON',
    ]);
    answer = { status: 200, body: JSON.stringify(pod('two')) };
    // The next poll (1 s) emits it; waited for rather than slept, as a loaded machine is slower.
    await waitFor('the new pod emitted', () => emissions.at(-1)!.some((p) => p.metadata!.name === 'two-n1'), 5000, 50);
    assert.deepEqual(emissions.at(-1)!.map((p) => p.metadata!.name), ['two-n1']);
    assert.ok(lines.some((l) => l.msg === 'static pod URL answers again'));
  });

  it('refuses the whole answer when one item is invalid; never emits before a first success', async function () {
    answer = { status: 200, body: JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: [pod('ok'), { metadata: { name: 'Bad_Name' }, spec: { containers: [] } }] }) };
    const { emissions, lines, started } = start();
    await started;
    assert.deepEqual(emissions, []);
    assert.match(lines.find((l) => l.level === 40)!.err!, /items\[1\]: invalid pod: metadata\.name/);
  });
});
