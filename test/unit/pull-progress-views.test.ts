/**
 * Issue 17, item 3: pull progress in the views that print a line per change, `kubelet-ts pods
 * -w` and the up console: shown when a pull starts and when it has moved on, not every second.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { podsCommand } from '../../core/commands/pods.ts';
import { PullProgressThrottle } from '../../core/commands/pull-progress-throttle.ts';
import { pullingMessage } from '../../core/runtime/pull-progress-format.ts';
import { PodLineTracker } from '../../tools/up/pod-lines.ts';
import { TextSink } from '../support/text-sink.ts';

const MB = 1_000_000;
const NOW = Date.parse('2026-01-01T00:00:00Z');
const msg = (done: number, total = 300 * MB, rate = 12 * MB) => pullingMessage('r/big:1', { doneBytes: done, totalBytes: total, bytesPerSecond: rate, shared: false });

function pullingPod(message: string | undefined, uid = 'u1'): V1Pod {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: 'big-vm', namespace: 'default', uid, annotations: { 'kubernetes.io/config.seen': new Date(NOW - 9000).toISOString() } },
    spec: { containers: [{ name: 'app', image: 'r/big:1' }] },
    status: { phase: 'Pending', containerStatuses: [{ name: 'app', image: 'r/big:1', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating', ...(message ? { message } : {}) } } }] },
  };
}

describe('ux: pull progress in pods -w and the up console', function () {
  it('the throttle shows a pull at its start, then every 10 % at most every 2 s; without a total every 10 s', () => {
    const t = new PullProgressThrottle();
    assert.equal(t.shouldShow('k', 'Back-off pulling image "x"', NOW), false, 'no pull progress');
    assert.equal(t.shouldShow('k', msg(1 * MB), NOW), true, 'the start');
    assert.equal(t.shouldShow('k', msg(2 * MB), NOW + 1000), false, 'barely moved');
    assert.equal(t.shouldShow('k', msg(40 * MB), NOW + 1500), false, '13 % on, but within 2 s');
    assert.equal(t.shouldShow('k', msg(40 * MB, 300 * MB, 11 * MB), NOW + 2500), true, '13 % on, 2.5 s later');
    assert.equal(t.shouldShow('k', msg(60 * MB), NOW + 9000), false, '7 % on');
    const unknown = (done: number) => pullingMessage('r/big:1', { doneBytes: done, totalBytes: 0, bytesPerSecond: 0, shared: false });
    assert.equal(t.shouldShow('n', unknown(1 * MB), NOW), true);
    assert.equal(t.shouldShow('n', unknown(5 * MB), NOW + 5000), false);
    assert.equal(t.shouldShow('n', unknown(9 * MB), NOW + 10_000), true);
    t.retain(new Set(['n']));
    assert.equal(t.shouldShow('k', msg(70 * MB), NOW + 9100), true, 'forgotten: a new pull shows from its start');
  });

  it('the console prints a pulling pod when it starts and as it moves on, not on every poll, and other changes at once', () => {
    let now = NOW;
    const tracker = new PodLineTracker(() => now);
    const printed: string[] = [];
    printed.push(...tracker.update([pullingPod(undefined)]));
    // 30 polls a second apart, 10 MB/s of 300 MB.
    for (let i = 1; i <= 30; i++) {
      now = NOW + i * 1000;
      printed.push(...tracker.update([pullingPod(msg(i * 10 * MB))]));
    }
    now += 1000;
    printed.push(...tracker.update([{ ...pullingPod(undefined), status: { phase: 'Running', containerStatuses: [{ name: 'app', image: 'r/big:1', imageID: 'x', ready: true, restartCount: 0, state: { running: {} } }] } }]));
    assert.equal(printed[0], 'default/big-vm  ContainerCreating  ready 0/1  ip -  restarts 0  app: ContainerCreating');
    assert.equal(printed[1], 'default/big-vm  ContainerCreating  ready 0/1  ip -  restarts 0  app: ContainerCreating (Pulling image "r/big:1": 10 / 300 MB (3%), 12 MB/s)');
    const progress = printed.filter((l) => l.includes('Pulling image'));
    assert.ok(progress.length >= 8 && progress.length <= 12, `about one line per 10 %: ${progress.length}\n${printed.join('\n')}`);
    assert.match(printed[printed.length - 1]!, /Running {2}ready 1\/1/);
  });

  it('pods -w prints the row again with the progress after it when the pull moves on; STATUS stays ContainerCreating', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pp-views-'));
    const socketPath = path.join(dir, 'kubelet-ts.sock');
    let served: V1Pod[] = [pullingPod(undefined)];
    const server = http.createServer((req, res) => {
      if (req.url?.startsWith('/pods')) return void res.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: served }));
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
    const ac = new AbortController();
    const out = new TextSink();
    let now = NOW;
    try {
      const watching = podsCommand(['-w'], { socketPath, stdout: out, stderr: new TextSink(), now: () => now, signal: ac.signal, pollMs: 10 });
      for (let i = 0; i < 200 && !out.text.includes('big-vm'); i++) await sleep(5);
      // The pull moves 10 MB a (fake) second for 30 s, each step seen by a few polls.
      for (let s = 1; s <= 30; s++) {
        now = NOW + s * 1000;
        served = [pullingPod(msg(s * 10 * MB))];
        await sleep(25);
      }
      served = [{ ...pullingPod(undefined), status: { phase: 'Running', containerStatuses: [{ name: 'app', image: 'r/big:1', imageID: 'x', ready: true, restartCount: 0, state: { running: {} } }] } }];
      for (let i = 0; i < 200 && !/Running/.test(out.text); i++) await sleep(5);
      ac.abort();
      assert.equal(await watching, 0);
    } finally {
      ac.abort();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await fs.rm(dir, { recursive: true, force: true });
    }
    const lines = out.text.trimEnd().split('\n');
    assert.match(lines[0]!, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$/);
    assert.match(lines[1]!, /^big-vm\s+0\/1\s+ContainerCreating\s+0\s+9s$/);
    const progress = lines.filter((l) => l.includes('Pulling image'));
    assert.ok(progress.length >= 5 && progress.length <= 12, `a line every 10 % or so, not every poll: ${progress.length}\n${out.text}`);
    for (const l of progress) assert.match(l, /^big-vm\s+0\/1\s+ContainerCreating\s+0\s+\d+s\s{3,}Pulling image "r\/big:1": [\d.]+ \/ 300 MB \(\d+%\), 12 MB\/s$/);
    assert.match(lines[lines.length - 1]!, /^big-vm\s+1\/1\s+Running\s+0/);
  });
});
