/**
 * The up console keeps its kubelet running as systemd's Restart=always does (issue 24 item 3):
 * a kubelet that exits on a bug is started again and the console says so in plain words; one
 * that keeps exiting is given up on, and the console stops the node.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { KubeletSupervisor } from '../../tools/up/kubelet-supervisor.ts';
import { waitFor } from '../support/wait-for.ts';

describe('up console: the kubelet supervisor', function () {
  this.timeout(20_000);
  let dir: string;
  beforeEach(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-up-supervisor-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  /** A stand-in kubelet: its first run exits with 70 (a bug), later runs keep running. */
  const standIn = (marker: string) => `const fs = require('node:fs'); if (!fs.existsSync(${JSON.stringify(marker)})) { fs.writeFileSync(${JSON.stringify(marker)}, ''); process.exit(70); } setInterval(() => {}, 1000);`;

  it('starts a kubelet that stopped on a bug again, saying so, and stops it for good on stop()', async function () {
    const said: string[] = [];
    const marker = path.join(dir, 'crashed-once');
    let starts = 0;
    let gaveUp = false;
    const sup = new KubeletSupervisor({
      spawn: () => (starts++, spawn(process.execPath, ['-e', standIn(marker)], { stdio: 'ignore' })),
      say: (t) => said.push(t),
      raw: (t) => said.push(`raw: ${t}`),
      logTail: async () => '{"level":60,"msg":"uncaught exception in plugin \'buggy\'"}',
      giveUp: () => (gaveUp = true),
      restartDelayMs: 50,
    });
    sup.start();
    await waitFor('a second kubelet runs', () => starts === 2 && sup.pid !== undefined, 10_000, 20);
    assert.deepEqual(said.slice(0, 3), [
      'the kubelet exited (exit code 70: it stopped on a bug, which its log names); the last lines of its log:',
      'raw: {"level":60,"msg":"uncaught exception in plugin \'buggy\'"}',
      'starting the kubelet again in 0.05 s (restart 1 of at most 5 in 10 min); its pods keep running, and it takes them over when it is back',
    ]);
    const pid = sup.pid!;
    await sup.stop(5000);
    assert.throws(() => process.kill(pid, 0), 'the kubelet is gone');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(starts, 2, 'not started again after stop()');
    assert.equal(gaveUp, false);
  });

  it('gives up on a kubelet that keeps exiting, and says why', async function () {
    const said: string[] = [];
    let gaveUp = false;
    const sup = new KubeletSupervisor({
      spawn: () => spawn(process.execPath, ['-e', 'process.exit(1)'], { stdio: 'ignore' }),
      say: (t) => said.push(t),
      raw: () => {},
      logTail: async () => '',
      giveUp: () => (gaveUp = true),
      restartDelayMs: 20,
      maxRestarts: 2,
    });
    sup.start();
    await waitFor('given up', () => gaveUp, 10_000, 20);
    assert.equal(said.filter((t) => t.startsWith('the kubelet exited (exit code 1)')).length, 3);
    assert.equal(said.at(-1), 'the kubelet exited 3 times within 10 min: not starting it again; stopping the node');
    await sup.stop(1000);
  });
});
