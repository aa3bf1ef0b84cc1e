import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { createApiClient, type ApiClient } from '../../core/apiserver/api-client.ts';
import { ApiPodSource } from '../../core/sources/api-pods.ts';
import { waitFor } from '../../tools/node-env/util.ts';
import { captureLogger } from '../support/capture-logger.ts';
import { sendJSON, startFakeApiServer, status, writeKubeconfig, type FakeApiServer } from '../support/fake-apiserver.ts';

const NODE = 'n1';

function pod(name: string, uid: string, rv: string, over: { nodeName?: string; labels?: Record<string, string> } = {}): object {
  return {
    metadata: { name, namespace: 'default', uid, resourceVersion: rv, creationTimestamp: '2026-01-01T00:00:00Z', ...(over.labels ? { labels: over.labels } : {}) },
    spec: { nodeName: over.nodeName ?? NODE, containers: [{ name: 'c', image: 'busybox' }] },
  };
}

/**
 * A scripted API server for the pod list-watch: `list` answers lists, watches stay open until
 * the test writes events or ends them.
 */
class PodServer {
  list: () => { code: number; body: object } = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '10' }, items: [] } });
  watches: ServerResponse[] = [];
  /** Watches whose connection the client closed or lost. */
  closedWatches = 0;
  watchQueries: URLSearchParams[] = [];
  listQueries: URLSearchParams[] = [];
  down = false;
  /** Refuses watch requests with this answer, when set. */
  watchRefusal: { code: number; body: object } | undefined;
  srv!: FakeApiServer;

  async start(): Promise<void> {
    this.srv = await startFakeApiServer((req, res) => {
      const url = new URL(req.url, 'https://x');
      if (this.down) return sendJSON(res, 503, status(503, 'ServiceUnavailable', 'the server is shutting down'));
      if (url.pathname !== '/api/v1/pods') return sendJSON(res, 404, status(404, 'NotFound', 'not here'));
      if (url.searchParams.get('watch') === 'true') {
        this.watchQueries.push(url.searchParams);
        if (this.watchRefusal) return sendJSON(res, this.watchRefusal.code, this.watchRefusal.body);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
        this.watches.push(res);
        res.on('close', () => this.closedWatches++);
        return;
      }
      this.listQueries.push(url.searchParams);
      const { code, body } = this.list();
      sendJSON(res, code, body);
    });
  }

  /** Writes an event to the newest open watch. */
  event(type: string, object: unknown): void {
    this.watches.at(-1)!.write(`${JSON.stringify({ type, object })}\n`);
  }

  async waitWatch(n: number): Promise<void> {
    await waitFor(`watch #${n}`, () => this.watches.length >= n, 5000, 10);
  }
}

describe('ApiPodSource (list-watch of the pods bound to the node)', function () {
  let server: PodServer;
  let client: ApiClient;
  let source: ApiPodSource;
  let sets: V1Pod[][];
  let logs: ReturnType<typeof captureLogger<{ level: number; msg: string; problem?: string; pod?: string }>>;
  let dir: string;

  beforeEach(async function () {
    server = new PodServer();
    await server.start();
    const file = await writeKubeconfig(server.srv.url);
    dir = path.dirname(file);
    logs = captureLogger('debug');
    client = createApiClient({ kubeconfig: file, logger: logs.logger });
    sets = [];
  });

  afterEach(async function () {
    await source?.stop();
    client.close();
    for (const w of server.watches) w.destroy();
    await server.srv.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  function startSource(opts: Partial<ConstructorParameters<typeof ApiPodSource>[0]> = {}): Promise<void> {
    source = new ApiPodSource({ client, nodeName: NODE, logger: logs.logger, backoff: { initialMs: 20, maxMs: 100 }, ...opts });
    return source.start((pods) => sets.push(pods));
  }
  const names = (set: V1Pod[] | undefined) => (set ?? []).map((p) => p.metadata!.name).sort();

  it('lists from the watch cache first, then watches from the list\'s resourceVersion with bookmarks and a timeout', async function () {
    server.list = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '10' }, items: [pod('a', 'uid-a', '5')] } });
    await startSource();
    assert.deepEqual(sets.map(names), [['a']], 'start() resolves after the first set');
    assert.deepEqual([server.listQueries[0]!.get('fieldSelector'), server.listQueries[0]!.get('resourceVersion')], ['spec.nodeName=n1', '0']);
    await server.waitWatch(1);
    const q = server.watchQueries[0]!;
    assert.deepEqual([q.get('fieldSelector'), q.get('resourceVersion'), q.get('allowWatchBookmarks')], ['spec.nodeName=n1', '10', 'true']);
    const timeout = Number(q.get('timeoutSeconds'));
    // 30–60 min, not client-go's 5–10: a dead watch is caught by the silence check instead.
    assert.ok(timeout >= 1800 && timeout < 3600, `timeoutSeconds ${timeout}`);
    const a = sets[0]![0]!;
    assert.equal(a.metadata!.annotations!['kubernetes.io/config.source'], 'api');
    assert.ok(a.metadata!.annotations!['kubernetes.io/config.seen']);
    assert.deepEqual([a.kind, a.apiVersion, a.metadata!.creationTimestamp], ['Pod', 'v1', '2026-01-01T00:00:00Z']);
  });

  it('emits adds, updates and deletes; skips hostile pods with one line each', async function () {
    await startSource();
    await server.waitWatch(1);
    server.event('ADDED', pod('a', 'uid-a', '11'));
    server.event('ADDED', pod('b', 'uid-b', '12'));
    await waitFor('a and b', () => names(sets.at(-1)).join() === 'a,b', 2000, 10);
    const emitted = sets.length;
    server.event('MODIFIED', pod('a', 'uid-a', '13', { labels: { v: '2' } }));
    await waitFor('the update', () => sets.at(-1)!.find((p) => p.metadata!.name === 'a')?.metadata?.labels?.v === '2', 2000, 10);
    assert.equal(sets.length, emitted + 1);
    const updatedA = sets.at(-1)!.find((p) => p.metadata!.name === 'a')!;
    // A status update (the kubelet's own, most events once pods run) changes nothing the kubelet acts on.
    server.event('MODIFIED', { ...pod('a', 'uid-a', '14', { labels: { v: '2' } }), status: { phase: 'Running' } });
    server.event('BOOKMARK', { metadata: { resourceVersion: '14' } });
    for (let i = 0; i < 2; i++) {
      server.event('ADDED', { metadata: { name: 'no-uid', namespace: 'default' }, spec: { nodeName: NODE, containers: [{ name: 'c' }] } });
      server.event('ADDED', { metadata: { uid: 'uid-x', namespace: 'default' }, spec: { nodeName: NODE, containers: [{ name: 'c' }] } });
      server.event('ADDED', pod('elsewhere', 'uid-e', '14', { nodeName: 'n2' }));
      server.event('ADDED', { metadata: { name: 'empty', namespace: 'default', uid: 'uid-empty' }, spec: { nodeName: NODE, containers: [] } });
      server.event('ADDED', 'not an object');
    }
    server.event('DELETED', pod('b', 'uid-b', '15'));
    await waitFor('the delete', () => names(sets.at(-1)).join() === 'a', 2000, 10);
    assert.equal(sets.length, emitted + 2, 'the update and the delete; not the status update, the bookmark or the skipped pods');
    // The kubelet's pod set compares pods by object first: an unchanged pod is the same object.
    assert.equal(sets.at(-1)!.find((p) => p.metadata!.name === 'a'), updatedA, 'after a status update, the same object of pod a');
    const skips = logs.lines.filter((l) => l.msg === 'skipping a pod from the API server').map((l) => `${l.pod}: ${l.problem}`);
    assert.deepEqual(skips, [
      'default/no-uid: no metadata.uid',
      'uid-x: no metadata.name',
      'uid-e: spec.nodeName is "n2", not this node',
      'uid-empty: no spec.containers',
      '(unnamed): not an object',
    ]);
    assert.ok(sets.every((s) => s.every((p) => p.metadata!.name === 'a' || p.metadata!.name === 'b')));
  });

  it('re-lists on 410 Gone without emitting when nothing changed, and emits only real removals', async function () {
    server.list = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '20' }, items: [pod('a', 'uid-a', '5'), pod('b', 'uid-b', '6')] } });
    await startSource();
    await server.waitWatch(1);
    server.event('ERROR', status(410, 'Expired', 'too old resource version: 5 (20)'));
    await server.waitWatch(2);
    assert.equal(server.listQueries.at(-1)!.get('resourceVersion'), '', 'the re-list after 410 reads etcd');
    assert.equal(sets.length, 1, 'the same pods: nothing emitted, nothing removed');
    server.list = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '30' }, items: [pod('a', 'uid-a', '5')] } });
    server.event('ERROR', status(410, 'Gone', 'gone'));
    await waitFor('b removed by the re-list', () => names(sets.at(-1)).join() === 'a', 2000, 10);
    assert.equal(sets.length, 2);
  });

  it('re-lists from etcd on "Too large resource version" (etcd restored): as a watch event, and as the answer to a watch', async function () {
    server.list = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '900' }, items: [pod('a', 'uid-a', '5'), pod('b', 'uid-b', '6')] } });
    await startSource();
    await server.waitWatch(1);
    const tooLarge = { ...status(504, 'Timeout', 'Too large resource version: 900, current: 20'), details: { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] } };
    // The restored server has only b.
    server.list = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '20' }, items: [pod('b', 'uid-b', '6')] } });
    server.event('ERROR', tooLarge);
    await waitFor('a removed by the re-list', () => names(sets.at(-1)).join() === 'b', 2000, 10);
    assert.equal(server.listQueries.at(-1)!.get('resourceVersion'), '', 'the re-list reads etcd');
    await server.waitWatch(2);
    assert.equal(server.watchQueries.at(-1)!.get('resourceVersion'), '20', 'watching from the restored server\'s resourceVersion');
    // A watch request refused with it (an older server: a Timeout whose cause says so).
    const lists = server.listQueries.length;
    server.watchRefusal = { code: 504, body: { ...status(504, 'Timeout', 'Timeout: Too large resource version: 20, current: 3'), details: { causes: [{ message: 'Too large resource version' }] } } };
    server.list = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '3' }, items: [] } });
    for (const w of server.watches) w.end();
    await waitFor('a re-list after the refusal', () => server.listQueries.length > lists, 3000, 10);
    server.watchRefusal = undefined;
    await waitFor('b removed', () => (sets.at(-1) ?? []).length === 0, 2000, 10);
  });

  it('re-lists when asked (the Node was registered again), dropping pods the server no longer has', async function () {
    server.list = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '500' }, items: [pod('a', 'uid-a', '5')] } });
    await startSource();
    await server.waitWatch(1);
    server.list = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '7' }, items: [pod('new', 'uid-new', '7')] } });
    source.relist('the Node was registered again');
    await waitFor('the server\'s pods', () => names(sets.at(-1)).join() === 'new', 2000, 10);
    assert.equal(server.listQueries.at(-1)!.get('resourceVersion'), '');
    await server.waitWatch(2);
    assert.equal(server.watchQueries.at(-1)!.get('resourceVersion'), '7');
  });

  it('re-lists after watches in a row that ended past the bookmark interval with nothing (not even a bookmark)', async function () {
    await startSource({ bookmarkIntervalMs: 50 });
    await server.waitWatch(1);
    assert.equal(server.listQueries.length, 1);
    // One empty watch, then one with a bookmark: no re-list.
    await sleep(80);
    server.watches.at(-1)!.end();
    await server.waitWatch(2);
    server.event('BOOKMARK', { metadata: { resourceVersion: '11' } });
    await sleep(80);
    server.watches.at(-1)!.end();
    await server.waitWatch(3);
    assert.equal(server.listQueries.length, 1, 'a bookmark resets the count');
    for (let n = 4; n <= 5; n++) {
      await sleep(80);
      server.watches.at(-1)!.end();
      if (n < 5) await server.waitWatch(n);
    }
    await waitFor('a re-list after two empty watches', () => server.listQueries.length === 2, 3000, 10);
    assert.equal(server.listQueries[1]!.get('resourceVersion'), '');
  });

  it('keeps the set while the API server is away, logs the outage once, and resumes from the last resourceVersion', async function () {
    server.list = () => ({ code: 200, body: { kind: 'PodList', metadata: { resourceVersion: '40' }, items: [pod('a', 'uid-a', '5')] } });
    await startSource();
    await server.waitWatch(1);
    server.event('MODIFIED', pod('a', 'uid-a', '41', { labels: { v: '2' } }));
    await waitFor('rv 41', () => sets.length === 2, 2000, 10);
    server.down = true;
    server.watches.at(-1)!.destroy();
    await new Promise((r) => setTimeout(r, 400)); // several watch retries
    assert.equal(sets.length, 2, 'nothing emitted while the server is away');
    server.down = false;
    await server.waitWatch(2);
    assert.equal(server.watchQueries.at(-1)!.get('resourceVersion'), '41', 'the watch resumes where it was');
    assert.equal(server.listQueries.length, 1, 'no re-list after an outage');
    server.event('ADDED', pod('b', 'uid-b', '42'));
    await waitFor('b', () => names(sets.at(-1)).join() === 'a,b', 2000, 10);
    const warnings = logs.lines.filter((l) => l.level >= 40).map((l) => l.msg);
    assert.deepEqual(warnings, [`API server ${server.srv.url} is unreachable; requests are retried with back-off until it answers`]);
  });

  it('start() gives up waiting for an unanswered list after the bound, with a warning; the first set comes when a list succeeds', async function () {
    server.down = true;
    const t0 = performance.now();
    await startSource({ initialListTimeoutMs: 300 });
    assert.ok(performance.now() - t0 < 1000);
    assert.deepEqual(sets, [], 'no set before a list succeeded: the kubelet keeps what it runs');
    assert.ok(logs.lines.some((l) => l.level === 40 && /not known yet/.test(l.msg)));
    server.down = false;
    await waitFor('the first set', () => sets.length === 1, 3000, 10);
  });
  describe('a silent watch (no event, no bookmark)', function () {
    const SILENCE_MS = 300;
    const silentLines = () => logs.lines.filter((l) => /the watch went silent/.test(l.msg)) as unknown as Array<{ level: number; path: string; silentMs: number; resourceVersion: string }>;

    it('is ended after the silence time and watched again from its resourceVersion; a pod created meanwhile reaches the kubelet', async function () {
      await startSource({ silenceMs: SILENCE_MS });
      await server.waitWatch(1);
      server.event('ADDED', pod('a', 'uid-a', '11'));
      const lastHeard = performance.now();
      await waitFor('a', () => names(sets.at(-1)).join() === 'a', 2000, 10);
      // The server creates pod b, but this watch is dead: it never says so.
      await server.waitWatch(2);
      const silentFor = performance.now() - lastHeard;
      assert.ok(silentFor >= SILENCE_MS, `the watch was given up after ${Math.round(silentFor)} ms, before the silence time`);
      assert.ok(silentFor < SILENCE_MS * 1.2 + 500, `the watch was given up only after ${Math.round(silentFor)} ms`);
      await waitFor('the dead watch closed', () => server.closedWatches >= 1, 2000, 10);
      assert.equal(server.watchQueries[1]!.get('resourceVersion'), '11', 'watched again from the last resourceVersion');
      assert.equal(server.listQueries.length, 1, 'no re-list');
      // The new watch replays what happened after resourceVersion 11, as the API server does.
      server.event('ADDED', pod('b', 'uid-b', '12'));
      await waitFor('b reaches the kubelet', () => names(sets.at(-1)).join() === 'a,b', 2000, 10);
      const lines = silentLines();
      assert.equal(lines.length, 1, 'logged once');
      assert.equal(lines[0]!.level, 30, 'at info');
      assert.equal(lines[0]!.path, '/api/v1/pods');
      assert.equal(lines[0]!.resourceVersion, '11');
      assert.ok(lines[0]!.silentMs >= SILENCE_MS);
      assert.deepEqual(logs.lines.filter((l) => l.level >= 40).map((l) => l.msg), [], 'no warning');
    });

    it('is kept while the server has sent neither a bookmark nor a change of the resource (its watch cache saw none since it started)', async function () {
      await startSource({ silenceMs: SILENCE_MS });
      await server.waitWatch(1);
      await sleep(SILENCE_MS * 3);
      assert.equal(server.watches.length, 1, 'the same watch after three silence periods');
      assert.equal(server.closedWatches, 0);
      assert.deepEqual(silentLines(), []);
      // The first bookmark arms the check: once bookmarks stop, the watch is given up.
      server.event('BOOKMARK', { kind: 'Pod', metadata: { resourceVersion: '11' } });
      await server.waitWatch(2);
      assert.equal(silentLines().length, 1);
    });

    it('a watch that hears only bookmarks is kept', async function () {
      // The fake server runs in this process: a stall of the process (the pure lane runs at nice
      // 10 beside the node lanes) silences it as much as the watch. A bookmark every tenth of
      // the silence time leaves a stall of nine tenths to absorb (a third, with 300 ms, failed
      // once in CI); the widest gap between two bookmarks is said if the watch is given up.
      const silenceMs = 1000;
      const bookmarkEveryMs = silenceMs / 10;
      await startSource({ silenceMs });
      await server.waitWatch(1);
      let widestGapMs = 0;
      let sentAt = performance.now();
      for (let i = 0; i < 30; i++) {
        server.event('BOOKMARK', { kind: 'Pod', metadata: { resourceVersion: String(11 + i) } });
        widestGapMs = Math.max(widestGapMs, performance.now() - sentAt);
        sentAt = performance.now();
        await sleep(bookmarkEveryMs);
      }
      const kept = `kept for three silence periods of bookmarks (widest gap between two: ${Math.round(widestGapMs)} ms)`;
      assert.equal(server.watches.length, 1, `the same watch ${kept}`);
      assert.equal(server.closedWatches, 0, `no watch closed ${kept}`);
      assert.deepEqual(silentLines(), []);
      // Once the bookmarks stop, the watch is given up, and the next starts after the last one.
      await server.waitWatch(2);
      assert.equal(server.watchQueries[1]!.get('resourceVersion'), '40');
    });

    it('stop() leaves no silence timer: nothing is asked and nothing logged afterwards', async function () {
      const intervals = new Map<unknown, number>();
      const realSet = globalThis.setInterval;
      const realClear = globalThis.clearInterval;
      // Records the intervals made while the source runs, and which were cleared.
      globalThis.setInterval = ((fn: () => void, ms?: number) => {
        const t = realSet(fn, ms);
        intervals.set(t, ms ?? 0);
        return t;
      }) as typeof setInterval;
      globalThis.clearInterval = ((t: Parameters<typeof clearInterval>[0]) => {
        intervals.delete(t);
        realClear(t);
      }) as typeof clearInterval;
      try {
        await startSource({ silenceMs: SILENCE_MS });
        await server.waitWatch(1);
        assert.equal([...intervals.values()].filter((ms) => ms === SILENCE_MS / 5).length, 1, 'one silence check for the watch');
        await source.stop();
        assert.deepEqual([...intervals.values()].filter((ms) => ms === SILENCE_MS / 5), [], 'the silence check is cleared');
      } finally {
        globalThis.setInterval = realSet;
        globalThis.clearInterval = realClear;
      }
      const requests = server.srv.requests.length;
      await sleep(SILENCE_MS * 2);
      assert.equal(server.srv.requests.length, requests, 'no watch started after stop()');
      assert.deepEqual(silentLines(), []);
    });
  });
});
