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

  it('keeps up with a container that floods its log: once it rotated, it looks again within a second rather than a whole interval, and never keeps more than containerLogMaxFiles files', async function () {
    await t?.dispose(60_000);
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]],
      // A monitor interval far longer than the window watched below: only the re-check after a rotation can rotate within it.
      config: { containerLogs: { maxSizeBytes: 1024 * 1024, maxFiles: 3, monitorIntervalMs: 8000 } },
      dir: path.join(dir, 'flood'),
    });
    await t.writeManifest('flood.json', podManifest('h15-flood-log', [{ name: 'flood', image: env.images.busybox, command: ['sh', '-c', `yes ${'0'.repeat(99)}`] }], { hostNetwork: true, terminationGracePeriodSeconds: 0 }, { namespace: 'h15-flood' }));
    const pod = await t.waitForPod('h15-flood-log', isRunning, 60_000, 'flood running');
    const logDir = path.join(t.config.podLogsDir, `h15-flood_${pod!.metadata!.name}_${pod!.metadata!.uid}`, 'flood');
    const rotatedName = /^0\.log\.(\d{8}-\d{6})(\.gz)?$/;
    const rotations = async () => (await fs.readdir(logDir).catch(() => [] as string[])).flatMap((f) => rotatedName.exec(f)?.[1] ?? []);
    await waitFor('the first rotation', async () => (await rotations()).length > 0, 20_000, 100);
    // Over the next 5 s (less than one monitor interval), rotations by the second, with at most 3 files at any time.
    const seen = new Set<string>();
    for (const end = Date.now() + 5000; Date.now() < end;) {
      const files = (await fs.readdir(logDir)).filter((f) => !f.endsWith('.tmp'));
      assert.ok(files.length <= 3, `at most containerLogMaxFiles files: ${files.join(' ')}`);
      for (const r of await rotations()) seen.add(r);
      await sleep(100);
    }
    assert.ok(seen.size >= 4, `rotated at least 3 more times within one monitor interval (rotations seen: ${[...seen].join(' ')})`);
  });
});
