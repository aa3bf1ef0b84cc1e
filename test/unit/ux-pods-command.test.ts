/**
 * Issue 17: `kubelet-ts pods` / `get pods` against a stand-in for the kubelet's local socket,
 * and `logs` / `explain` picking one of two pods of one name by a UID prefix.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { podsCommand } from '../../core/commands/pods.ts';
import { logsCommand } from '../../core/commands/logs.ts';
import { explainCommand } from '../../core/commands/explain.ts';
import type { PodStartTimeline } from '../../core/timeline/pod-timeline.ts';
import { TextSink } from '../support/text-sink.ts';
import { waitFor } from '../support/wait-for.ts';

const NOW = Date.parse('2026-11-22T12:00:00Z');

/** Serves /pods, a timeline and a container log on a unix socket, as the kubelet's local socket does. */
class FakeLocalKubelet {
  pods: V1Pod[] = [];
  readonly requests: string[] = [];
  timelines = new Map<string, PodStartTimeline>();
  private server!: http.Server;
  constructor(readonly socketPath: string) {}

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      this.requests.push(`${url.pathname}${url.search}`);
      if (url.pathname === '/pods') return void res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: this.pods }));
      const tl = /^\/debug\/pods\/[^/]+\/[^/]+\/timeline$/.exec(url.pathname);
      if (tl) {
        const t = this.timelines.get(url.searchParams.get('uid') ?? '');
        res.statusCode = t ? 200 : 404;
        return void res.end(t ? JSON.stringify(t) : 'no timeline\n');
      }
      if (url.pathname.startsWith('/containerLogs/')) return void res.end(`log of ${url.pathname}\n`);
      res.statusCode = 404;
      res.end('not found\n');
    });
    await new Promise<void>((resolve) => this.server.listen(this.socketPath, resolve));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

function pod(name: string, uid: string, opts: { ns?: string; phase?: string; waiting?: string; deleting?: boolean; ip?: string; ageMs?: number } = {}): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name, namespace: opts.ns ?? 'default', uid,
      annotations: { 'kubernetes.io/config.seen': new Date(NOW - (opts.ageMs ?? 65_000)).toISOString() },
      ...(opts.deleting ? { deletionTimestamp: new Date(NOW) } : {}),
    },
    spec: { nodeName: 'vm', containers: [{ name: 'app', image: 'busybox' }] },
    status: {
      phase: opts.phase ?? 'Running',
      ...(opts.ip ? { podIP: opts.ip } : {}),
      containerStatuses: [{
        name: 'app', image: 'busybox', imageID: '', restartCount: 0,
        ready: !opts.waiting && (opts.phase ?? 'Running') === 'Running',
        state: opts.waiting ? { waiting: { reason: opts.waiting } } : { running: { startedAt: new Date(NOW - 60_000) } },
      }],
    },
  } as V1Pod;
}

describe('ux: kubelet-ts pods, and logs/explain by UID prefix', function () {
  this.timeout(10_000);
  let dir: string;
  let kubelet: FakeLocalKubelet;
  const run = async (argv: string[], extra: { signal?: AbortSignal; pollMs?: number } = {}) => {
    const out = new TextSink();
    const err = new TextSink();
    const code = await podsCommand(argv, { socketPath: kubelet.socketPath, stdout: out, stderr: err, now: () => NOW, ...extra });
    return { code, out: out.text, err: err.text };
  };

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'h17-pods-'));
    kubelet = new FakeLocalKubelet(path.join(dir, 'kubelet-ts.sock'));
    await kubelet.start();
    kubelet.pods = [
      pod('web-vm', 'aaaa1111-0000', { ip: '10.88.0.4' }),
      pod('broken-vm', 'bbbb2222-0000', { phase: 'Pending', waiting: 'ImagePullBackOff', ageMs: 5_000 }),
      pod('sys-vm', 'cccc3333-0000', { ns: 'kube-system', ip: '10.88.0.9' }),
    ];
  });

  afterEach(async () => {
    await kubelet.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('prints the default namespace\'s pods as kubectl get pods does', async () => {
    const r = await run([]);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, [
      'NAME        READY   STATUS             RESTARTS   AGE',
      'broken-vm   0/1     ImagePullBackOff   0          5s',
      'web-vm      1/1     Running            0          65s',
      '',
    ].join('\n'));
  });

  it('-A adds NAMESPACE, -o wide adds IP and NODE, -n picks a namespace', async () => {
    const all = await run(['-A']);
    assert.match(all.out, /^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
    assert.match(all.out, /\nkube-system\s+sys-vm\s+1\/1\s+Running\s+0\s+65s\n/);
    const wide = await run(['-o', 'wide', '-n', 'kube-system']);
    assert.equal(wide.out, [
      'NAME     READY   STATUS    RESTARTS   AGE   IP          NODE   NOMINATED NODE   READINESS GATES',
      'sys-vm   1/1     Running   0          65s   10.88.0.9   vm     <none>           <none>',
      '',
    ].join('\n'));
    const none = await run(['-n', 'nowhere']);
    assert.deepEqual([none.code, none.out, none.err], [0, '', 'No resources found in nowhere namespace.\n']);
  });

  it('-o wide shows the kubectl debug containers of pods that have them (EPHEMERAL), READY counting none of them', async () => {
    const p = pod('dbg-vm', 'dddd4444-0000', { ns: 'kube-system', ip: '10.88.0.7' });
    p.spec!.ephemeralContainers = [{ name: 'debugger', image: 'busybox' }, { name: 'once', image: 'busybox' }];
    p.status!.ephemeralContainerStatuses = [
      { name: 'debugger', image: 'busybox', imageID: '', restartCount: 0, ready: false, state: { running: { startedAt: new Date(NOW - 1000) } } },
      { name: 'once', image: 'busybox', imageID: '', restartCount: 0, ready: false, state: { terminated: { exitCode: 3, reason: 'Error' } } },
    ];
    kubelet.pods.push(p);
    const wide = await run(['-o', 'wide', '-n', 'kube-system']);
    assert.equal(wide.out, [
      'NAME     READY   STATUS    RESTARTS   AGE   IP          NODE   NOMINATED NODE   READINESS GATES   EPHEMERAL',
      'dbg-vm   1/1     Running   0          65s   10.88.0.7   vm     <none>           <none>            debugger:Running,once:Error',
      'sys-vm   1/1     Running   0          65s   10.88.0.9   vm     <none>           <none>            <none>',
      '',
    ].join('\n'));
  });

  it('-o json and -o yaml print a v1 List; NAME filters, and a static pod answers to its manifest name', async () => {
    const json = JSON.parse((await run(['-o', 'json', 'web'])).out);
    assert.equal(json.kind, 'List');
    assert.deepEqual(json.items.map((p: V1Pod) => p.metadata?.name), ['web-vm']);
    const y = yaml.load((await run(['-o', 'yaml'])).out) as { items: V1Pod[] };
    assert.deepEqual(y.items.map((p) => p.metadata?.name), ['broken-vm', 'web-vm']);
    const missing = await run(['ghost']);
    assert.deepEqual([missing.code, missing.err], [1, 'Error from server (NotFound): pods "ghost" not found\n']);
    // As kubectl: the pods found are listed, the missing one is named, and the exit code says so.
    const some = await run(['web', 'ghost']);
    assert.deepEqual([some.code, some.err], [1, 'Error from server (NotFound): pods "ghost" not found\n']);
    assert.match(some.out, /^NAME +READY +STATUS +RESTARTS +AGE\nweb-vm +1\/1 +Running /);
  });

  it('bad flags and formats are named, with the usage', async () => {
    const r = await run(['-o', 'table']);
    assert.equal(r.code, 2);
    assert.match(r.err, /^kubelet-ts pods: --output: 'table' is not a format; allowed: wide, json, yaml, name\n/);
    const both = await run(['-A', '-n', 'x']);
    assert.match(both.err, /^kubelet-ts pods: -A and -n exclude each other/);
  });

  it('-w prints the table, then a row each time a pod changes (keyed by UID), and the last row of a pod that went away', async () => {
    const ac = new AbortController();
    const out = new TextSink();
    const watching = podsCommand(['-w'], { socketPath: kubelet.socketPath, stdout: out, stderr: new TextSink(), now: () => NOW, signal: ac.signal, pollMs: 30 });
    // A failed match counts as "not yet"; the last one's message (with the output) names the timeout.
    const waitForText = (re: RegExp) => waitFor(`output matching ${re}`, () => (assert.match(out.text, re), true), 2_000, 10);
    await waitForText(/web-vm/);
    await sleep(100); // several polls without a change: no new rows
    assert.equal(out.text.trimEnd().split('\n').length, 3, out.text);
    // The edited pod's replacement shares its name: a row of its own, the old one Terminating.
    kubelet.pods = [pod('web-vm', 'aaaa1111-0000', { deleting: true }), pod('web-vm', 'dddd4444-0000', { phase: 'Pending', waiting: 'ContainerCreating', ageMs: 0 }), kubelet.pods[1]!];
    await waitForText(/web-vm\s+1\/1\s+Terminating[\s\S]*web-vm\s+0\/1\s+ContainerCreating/);
    await sleep(100);
    const afterEdit = out.text.trimEnd().split('\n').length;
    assert.equal(afterEdit, 5, out.text);
    kubelet.pods = [pod('web-vm', 'dddd4444-0000', { ip: '10.88.0.7' }), kubelet.pods[2]!];
    // Wait for the rows after the edit's, not for a regex the first table's row already matches
    // (that returned at once, and a busy machine's poll came after the 100 ms that followed).
    const rowsAfterEdit = () => out.text.trimEnd().split('\n').slice(afterEdit);
    await waitFor('two rows after the edit', () => rowsAfterEdit().length >= 2, 5_000, 10);
    await sleep(100); // several polls without a change: no more rows
    ac.abort();
    assert.equal(await watching, 0);
    const rows = rowsAfterEdit();
    // The new pod Running, and the old one's last row once more as it leaves.
    assert.equal(rows.length, 2, out.text);
    assert.ok(rows.some((l) => /Running/.test(l)) && rows.some((l) => /Terminating/.test(l)), out.text);
  });

  it('logs: two pods of one name are ambiguous with their UID prefixes and states; a UID prefix picks one', async () => {
    kubelet.pods = [pod('hello-vm', '1a2b3c4d-aaaa', { deleting: true }), pod('hello-vm', '9f8e7d6c-bbbb', { phase: 'Pending', waiting: 'ContainerCreating' })];
    const err = new TextSink();
    assert.equal(await logsCommand(['hello'], { socketPath: kubelet.socketPath, stdout: new TextSink(), stderr: err }), 1);
    assert.equal(err.text, 'kubelet-ts logs: pod "hello" is ambiguous: default/hello-vm uid 1a2b3c4d (Terminating), default/hello-vm uid 9f8e7d6c (ContainerCreating); give a UID prefix instead of the name, as in: kubelet-ts logs 9f8e7d6c\n');
    const out = new TextSink();
    assert.equal(await logsCommand(['1a2b'], { socketPath: kubelet.socketPath, stdout: out, stderr: new TextSink() }), 0);
    assert.equal(out.text, 'log of /containerLogs/default/hello-vm/app\n');
    assert.equal(await logsCommand(['hello', '--uid', '9f8e'], { socketPath: kubelet.socketPath, stdout: new TextSink(), stderr: new TextSink() }), 0);
  });

  it('explain: a UID prefix asks for that pod\'s own timeline', async () => {
    kubelet.pods = [pod('hello-vm', '1a2b3c4d-aaaa', { deleting: true }), pod('hello-vm', '9f8e7d6c-bbbb', { phase: 'Pending', waiting: 'ContainerCreating' })];
    kubelet.timelines.set('9f8e7d6c-bbbb', { uid: '9f8e7d6c-bbbb', namespace: 'default', name: 'hello-vm', seenMs: NOW, readyMs: undefined, steps: [{ step: 'source-seen', startMs: NOW, durationMs: 0 }] });
    const err = new TextSink();
    assert.equal(await explainCommand(['hello'], { socketPath: kubelet.socketPath, stdout: new TextSink(), stderr: err }), 1);
    assert.match(err.text, /is ambiguous: .*uid 1a2b3c4d \(Terminating\).*uid 9f8e7d6c \(ContainerCreating\); give a UID prefix instead of the name, as in: kubelet-ts explain 9f8e7d6c/);
    const out = new TextSink();
    assert.equal(await explainCommand(['9f8e7d6c'], { socketPath: kubelet.socketPath, stdout: out, stderr: err }), 0, err.text);
    assert.match(out.text, /^default\/hello-vm {2}seen /);
    assert.ok(kubelet.requests.includes('/debug/pods/default/hello-vm/timeline?uid=9f8e7d6c-bbbb'), kubelet.requests.join(' '));
    const extra = new TextSink();
    assert.equal(await explainCommand(['hello', 'world'], { socketPath: kubelet.socketPath, stdout: new TextSink(), stderr: extra }), 2);
    assert.match(extra.text, /^kubelet-ts explain: unexpected argument 'world'/);
    // -o json, as pods and events take it, is --json: the timeline itself.
    for (const flags of [['-o', 'json'], ['--json']]) {
      const json = new TextSink();
      assert.equal(await explainCommand(['9f8e7d6c', ...flags], { socketPath: kubelet.socketPath, stdout: json, stderr: err }), 0, err.text);
      assert.deepEqual(JSON.parse(json.text), JSON.parse(JSON.stringify(kubelet.timelines.get('9f8e7d6c-bbbb'))), flags.join(' '));
    }
  });
});
