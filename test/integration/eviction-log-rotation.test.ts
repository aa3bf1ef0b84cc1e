import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { parseCriLog } from '../../core/logs/cri-log.ts';
import { readContainerLog } from '../../core/logs/log-follower.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Container log rotation on real containerd: a chatty container's log is rotated at
 * containerLogMaxSize through CRI ReopenContainerLog, at most containerLogMaxFiles files are
 * kept (older rotated ones gzipped, as upstream), and a follower of the log (what
 * `/containerLogs?follow` and `kubelet-ts logs -f` run) goes on across rotations without losing a line.
 */
describe('container log rotation on containerd', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let t: TestKubelet | undefined;
  let dir: string;

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp('/tmp/h15-logs-');
  });

  after(async function () {
    await t?.dispose(60_000).catch(() => {});
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('rotates at containerLogMaxSize, keeps at most containerLogMaxFiles, and a follower keeps reading across rotations', async function () {
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]],
      config: { containerLogs: { maxSizeBytes: 16 * 1024, maxFiles: 3, monitorIntervalMs: 300 } },
      dir,
    });
    // ~100 numbered lines of ~110 bytes a second.
    const script = 'i=0; while true; do i=$((i+1)); echo "line-$i-$(printf %0100d 0)"; [ $((i % 100)) = 0 ] && sleep 1; done';
    await t.writeManifest('chatty.json', podManifest('h15-chatty-log', [{ name: 'chatty', image: env.images.busybox, command: ['sh', '-c', script] }], { hostNetwork: true, terminationGracePeriodSeconds: 0 }, { namespace: 'h15-logs' }));
    const pod = await t.waitForPod('h15-chatty-log', isRunning, 60_000, 'chatty running');
    const logDir = path.join(t.config.podLogsDir, `h15-logs_${pod!.metadata!.name}_${pod!.metadata!.uid}`, 'chatty');
    const log = path.join(logDir, '0.log');
    await waitFor('log file', () => fs.stat(log).then(() => true), 10_000);

    // Follow the log as /containerLogs does.
    let text = '';
    const sink = new Writable({ write(chunk, _enc, cb) { text += chunk.toString(); cb(); } });
    const abort = new AbortController();
    const following = readContainerLog(log, { follow: true, signal: abort.signal, pollIntervalMs: 100, isRunning: () => true }, sink);
    try {
      // At least three rotations (two of them compressed by the later ones).
      await waitFor('three rotations', async () => (await fs.readdir(logDir)).filter((f) => f.endsWith('.gz')).length >= 1 && (await fs.readdir(logDir)).length >= 3, 60_000);
      for (let i = 0; i < 10; i++) {
        const files = await fs.readdir(logDir);
        assert.ok(files.filter((f) => !f.endsWith('.tmp')).length <= 3, `at most containerLogMaxFiles files: ${files.join(' ')}`);
        await sleep(300);
      }
      // Between two rotations: the current file, the newest rotated one uncompressed, older ones gzipped.
      const files = await waitFor('current, rotated and gzipped files', async () => {
        const f = (await fs.readdir(logDir)).sort();
        return f.includes('0.log') && f.some((x) => /^0\.log\.\d{8}-\d{6}$/.test(x)) && f.some((x) => /^0\.log\.\d{8}-\d{6}\.gz$/.test(x)) && f;
      }, 10_000, 50);
      const gz = files.find((f) => /^0\.log\.\d{8}-\d{6}\.gz$/.test(f))!;
      const entries = parseCriLog(gunzipSync(await fs.readFile(path.join(logDir, gz))));
      assert.ok(entries.length > 0 && entries.every((e) => /^line-\d+-0+\n?$/.test(e.log.toString())), 'a gzipped file holds CRI log lines');
    } finally {
      abort.abort();
      await following;
    }
    const numbers = text.split('\n').filter(Boolean).map((l) => Number(/^line-(\d+)-/.exec(l)?.[1]));
    assert.ok(numbers.length > 300, `read ${numbers.length} lines`);
    for (let i = 1; i < numbers.length; i++) assert.equal(numbers[i], numbers[i - 1]! + 1, `no line lost or repeated across rotations (at ${numbers[i - 1]})`);
  });

  it('keeps up with a container that floods its log: once it rotated, it looks again within seconds rather than a whole interval, and never keeps more than containerLogMaxFiles files', async function () {
    await t?.dispose(60_000);
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]],
      // A monitor interval far longer than the gap asserted below: only the re-check after a rotation can rotate within it.
      config: { containerLogs: { maxSizeBytes: 1024 * 1024, maxFiles: 3, monitorIntervalMs: 12_000 } },
      dir: path.join(dir, 'flood'),
    });
    // About 400 KB a second: the file is over the 1 MiB again some 2.5 s after each rotation, so
    // one quick pass a second after it finds it under the size (as a faster flood slowed by a busy
    // node did in CI); the passes must go on every second for the interval after a rotation.
    const script = `while true; do yes ${'0'.repeat(99)} | head -n 4000; sleep 1; done`;
    await t.writeManifest('flood.json', podManifest('h15-flood-log', [{ name: 'flood', image: env.images.busybox, command: ['sh', '-c', script] }], { hostNetwork: true, terminationGracePeriodSeconds: 0 }, { namespace: 'h15-flood' }));
    const pod = await t.waitForPod('h15-flood-log', isRunning, 60_000, 'flood running');
    const logDir = path.join(t.config.podLogsDir, `h15-flood_${pod!.metadata!.name}_${pod!.metadata!.uid}`, 'flood');
    const rotatedName = /^0\.log\.(\d{8}-\d{6})(\.gz)?$/;
    const seen = new Map<string, number>(); // rotation name → when first seen
    const look = async () => {
      const files = (await fs.readdir(logDir).catch(() => [] as string[])).filter((f) => !f.endsWith('.tmp'));
      assert.ok(files.length <= 3, `at most containerLogMaxFiles files: ${files.join(' ')}`);
      for (const f of files) {
        const r = rotatedName.exec(f)?.[1];
        if (r && !seen.has(r)) seen.set(r, Date.now());
      }
      return seen.size;
    };
    await waitFor('the first rotation', async () => (await look()) >= 1, 30_000, 100);
    // The second rotation comes within seconds (one pass, a short gzip, a one-second re-check), not after the 12 s interval.
    await waitFor('a second rotation', async () => (await look()) >= 2, 30_000, 100);
    const [first, second] = [...seen.values()];
    assert.ok(second! - first! < 7000, `the second rotation ${second! - first!} ms after the first (the monitor interval is 12 s)`);
  });
});
