import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { logsCommand } from '../../core/commands/logs.ts';
import { parseCriLog } from '../../core/logs/cri-log.ts';
import { podLogDir } from '../../core/pod/sandbox-config.ts';
import { freePort } from '../../tools/node-env/util.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { httpGet, socketGet } from '../support/http.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';
import { TextSink } from '../support/text-sink.ts';

/** GET a streaming response on the kubelet's local socket until `enough(body)` holds, then disconnect; bounded by a timeout. */
function getUntil(socketPath: string, url: string, enough: (body: string) => boolean, timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`GET ${url}: condition not reached within ${timeoutMs} ms; got ${JSON.stringify(body)}`));
    }, timeoutMs);
    const req = http.get({ socketPath, path: url }, (res) => {
      if (res.statusCode !== 200) {
        clearTimeout(timer);
        reject(new Error(`GET ${url}: ${res.statusCode}`));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (d) => {
        body += d;
        if (enough(body)) {
          clearTimeout(timer);
          req.destroy();
          resolve(body);
        }
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve(body);
      });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      if (!enough(body)) reject(err);
    });
  });
}

/**
 * Container logs on real containerd: a crashing container's current and previous instance,
 * tailLines, timestamps, follow on a ticking container, errors, and `kubelet-ts logs`, through
 * the kubelet's local socket (the main port serves the same routes, authenticated; the
 * read-only port does not serve logs, as upstream's).
 */
describe('container logs on containerd', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let t: TestKubelet;
  let base: string;
  let socketPath: string;
  const get = (p: string, timeoutMs = 10000) => socketGet(socketPath, p, timeoutMs);
  const ns = 'container-logs-test';

  before(async function () {
    env = await nodeEnvOrSkip(this);
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]],
      config: { readOnlyPort: await freePort(), crashLoopBackOff: { initialMs: 300, maxMs: 1000 }, imagePullBackOff: { initialMs: 500, maxMs: 2000 } },
    });
    socketPath = t.kubelet.mainServer!.socketPath!;
    base = `/containerLogs/${ns}`;
    // Each instance prints a line on stderr, then a unique marker and three lines on stdout,
    // lives 3 s and fails. (The runtime copies stdout and stderr separately: their relative
    // order in the file is only certain with a pause between them.)
    await t.writeManifest('crasher.yaml', podManifest('crasher', [{
      name: 'main',
      image: env.images.busybox,
      command: ['sh', '-c', 'echo err-line >&2; sleep 0.2; echo "instance $(cat /proc/sys/kernel/random/uuid)"; echo line-1; echo line-2; echo line-3; sleep 3; exit 1'],
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    await t.writeManifest('ticker.yaml', podManifest('ticker', [{
      name: 'tick',
      image: env.images.busybox,
      command: ['sh', '-c', 'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.2; done'],
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
  });

  after(async function () {
    await t.dispose();
  });

  const running = (p: V1Pod | undefined, minRestarts = 0) => isRunning(p) && (p!.status!.containerStatuses![0]!.restartCount ?? 0) >= minRestarts;
  const fileLines = async (pod: V1Pod, container: string, n: number) =>
    parseCriLog(await fs.readFile(path.join(podLogDir(t.config, pod), container, `${n}.log`))).map((e) => `${e.log}\n`).join('');

  /** The crasher's current log once its instance has printed everything (then it sleeps). */
  async function crasherPrinted(): Promise<string> {
    let cur = '';
    for (let i = 0; i < 50 && !cur.includes('line-3'); i++) {
      if (i > 0) await new Promise((res) => setTimeout(res, 100));
      cur = (await get(`${base}/crasher-test-node/main`)).body;
    }
    return cur;
  }

  it('serves the current instance, tailLines and timestamps', async () => {
    const pod = (await t.waitForPod('crasher', (p) => running(p), 30_000, 'Running'))!;
    const restarts = pod.status!.containerStatuses![0]!.restartCount;
    const cur = await crasherPrinted();
    assert.match(cur, /^err-line\ninstance [0-9a-f-]{36}\nline-1\nline-2\nline-3\n$/);
    assert.equal(cur, await fileLines(pod, 'main', restarts), 'the log of the current instance');

    const tail = await get(`${base}/crasher-test-node/main?tailLines=2`);
    assert.equal(tail.status, 200);
    assert.equal(tail.body, 'line-2\nline-3\n');

    const stamped = (await get(`${base}/crasher-test-node/main?timestamps=true&tailLines=3`)).body.split('\n');
    assert.equal(stamped.length, 4, stamped.join('\n'));
    for (const [i, want] of ['line-1', 'line-2', 'line-3'].entries()) {
      assert.match(stamped[i]!, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{9}(Z|[+-]\\d\\d:\\d\\d) ${want}$`));
    }
  });

  it('serves the previous instance with previous=true', async () => {
    // Check when the second (or a later) instance is running and still the same after the requests.
    for (let attempt = 0; ; attempt++) {
      const pod = (await t.waitForPod('crasher', (p) => running(p, 1), 30_000, 'restarted and Running'))!;
      const r = pod.status!.containerStatuses![0]!.restartCount;
      const cur = { body: await crasherPrinted() };
      const prev = await get(`${base}/crasher-test-node/main?previous=true`);
      const after = t.pod('crasher');
      if (!(running(after) && after!.status!.containerStatuses![0]!.restartCount === r)) {
        assert.ok(attempt < 3, 'the container kept restarting during the check');
        continue;
      }
      assert.equal(prev.status, 200);
      assert.match(prev.body, /^err-line\ninstance [0-9a-f-]{36}\nline-1\nline-2\nline-3\n$/);
      assert.equal(prev.body, await fileLines(pod, 'main', r - 1), 'the log of the previous instance');
      assert.notEqual(prev.body.split('\n')[1], cur.body.split('\n')[1], 'another instance than the current one');
      break;
    }
  });

  it('follows a ticking container until the client disconnects', async () => {
    await t.waitForPod('ticker', (p) => running(p), 30_000, 'Running');
    const body = await getUntil(socketPath, `${base}/ticker-test-node/tick?follow=true&tailLines=1`, (b) => b.split('\n').length > 6);
    const ticks = body.split('\n').slice(0, 6).map((l) => Number(/^tick (\d+)$/.exec(l)?.[1]));
    assert.ok(ticks.every((n) => Number.isInteger(n)), body);
    assert.deepEqual(ticks, ticks.map((_, i) => ticks[0]! + i), 'consecutive lines, new ones as they are written');
    // The kubelet still serves after the disconnect.
    assert.equal((await get('/healthz')).body, 'ok');
  });

  it('ends a follow when the container stops', async () => {
    await t.waitForPod('crasher', (p) => running(p), 30_000, 'Running');
    const started = Date.now();
    const body = await getUntil(socketPath, `${base}/crasher-test-node/main?follow=true`, () => false, 15_000);
    assert.match(body, /line-3\n$/);
    assert.ok(Date.now() - started < 10_000);
  });

  it('answers 404 for an unknown container or pod and 400/422 for bad options', async () => {
    const c = await get(`${base}/crasher-test-node/nope`);
    assert.equal(c.status, 404);
    assert.equal(c.body, 'container "nope" not found in pod "crasher-test-node"\n');
    const p = await get(`${base}/nope/main`);
    assert.equal(p.status, 404);
    assert.equal(p.body, 'pod "nope" does not exist\n');
    assert.equal((await get(`${base}/crasher-test-node/main?tailLines=x`)).status, 400);
    assert.equal((await get(`${base}/crasher-test-node/main?tailLines=-2`)).status, 422);
  });

  it('the read-only port does not serve logs (upstream\'s does not either)', async () => {
    const r = await httpGet(`http://127.0.0.1:${t.kubelet.readOnlyPort}/containerLogs/${ns}/crasher-test-node/main`);
    assert.equal(r.status, 404);
    assert.equal((await httpGet(`http://127.0.0.1:${t.kubelet.readOnlyPort}/healthz`)).body, 'ok');
  });

  it('kubelet-ts logs prints the log through the local socket', async () => {
    const err = new TextSink();
    // (Retried if the crasher restarted between the check and the command.)
    for (let attempt = 0; ; attempt++) {
      await t.waitForPod('crasher', (p) => running(p), 30_000, 'Running');
      await crasherPrinted();
      const out = new TextSink();
      const code = await logsCommand(['crasher', '--tail', '2'], { socketPath, stdout: out, stderr: err });
      assert.equal(code, 0, err.text);
      if (out.text !== 'line-2\nline-3\n' && attempt < 2) continue;
      assert.equal(out.text, 'line-2\nline-3\n');
      break;
    }

    const prev = new TextSink();
    assert.equal(await logsCommand(['crasher', '-n', ns, '-c', 'main', '--previous', '--timestamps'], { socketPath, stdout: prev, stderr: err }), 0, err.text);
    assert.match(prev.text, /^\S+ err-line\n\S+ instance [0-9a-f-]{36}\n\S+ line-1\n/);

    const ticks = new TextSink();
    const ac = new AbortController();
    const following = logsCommand(['ticker', '-f', '--tail', '1'], { socketPath, stdout: ticks, stderr: err, signal: ac.signal });
    for (let i = 0; i < 100 && ticks.text.split('\n').length < 4; i++) await new Promise((res) => setTimeout(res, 50));
    ac.abort();
    assert.equal(await following, 0);
    assert.ok(ticks.text.split('\n').length >= 4, ticks.text);

    const bad = new TextSink();
    assert.equal(await logsCommand(['crasher', '-c', 'nope'], { socketPath, stdout: new TextSink(), stderr: bad }), 1);
    assert.match(bad.text, /container "nope" is not valid for pod "crasher-test-node"/);
    const missing = new TextSink();
    assert.equal(await logsCommand(['ghost'], { socketPath, stdout: new TextSink(), stderr: missing }), 1);
    assert.match(missing.text, /pods "ghost" not found/);
  });
});
