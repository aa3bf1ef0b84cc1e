import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A node whose kubelet and containerd disagree on the cgroup driver: containerd 2.x says its
 * own over CRI RuntimeConfig, and kubelet-ts stops at start with one line saying what to change,
 * as upstream's kubelet (>= 1.31) does, instead of failing every pod's sandbox.
 */
describe('node VM: cgroup driver mismatch', function () {
  this.timeout(900_000);
  let t: TestNodeVm;

  before(async function () {
    this.timeout(1_200_000);
    t = await systemdNodeVmOrSkip(this, false);
  });
  after(async function () {
    this.timeout(600_000);
    // Back to the pair the other files expect.
    if (t) await t.startKubelet({ cgroupDriver: 'systemd' });
  });

  it('cgroupDriver: cgroupfs against containerd with SystemdCgroup = true: the kubelet exits at start with one ConfigError line, no sandbox made', async function () {
    const sandboxesBefore = new Set((await t.cri.listPodSandboxes()).map((s) => s.id));
    const since = await t.now();
    await t.startKubelet({ cgroupDriver: 'cgroupfs', waitReady: false });
    const expected = 'cgroupDriver is cgroupfs, but the container runtime uses the systemd cgroup driver';
    const journal = await waitFor('the ConfigError line in the journal of kubelet-ts', async () => {
      const j = await t.journal('kubelet-ts', since);
      return j.includes(expected) ? j : undefined;
    }, 420_000, 3000).catch(async (err: Error) => {
      throw new Error(`${err.message}\nthe journal of kubelet-ts:\n${(await t.journal('kubelet-ts', since)).split('\n').slice(-12).join('\n')}`);
    });
    const lines = journal.split('\n').filter((l) => l.includes(expected));
    process.stderr.write(`      ${lines[0]!.slice(0, 400)}\n`);
    // It exited (the unit restarts it, Restart=always): a failed process, not a running kubelet.
    await waitFor('kubelet-ts exited with an error status', async () => {
      const show = (await t.ssh('systemctl show kubelet-ts -p ExecMainStatus -p NRestarts -p ExecMainCode')).stdout;
      return /ExecMainCode=1\b/.test(show) && !/ExecMainStatus=0\b/.test(show) ? show : undefined;
    }, 120_000, 2000);
    // The error is on one line (a JSON log line or a plain stderr line), naming the fix.
    assert.match(lines[0]!, /SystemdCgroup|cgroupDriver: systemd/);
    await sleep(1000);
    // Earlier pods' sandboxes may go meanwhile; none may come.
    const made = (await t.cri.listPodSandboxes()).filter((s) => !sandboxesBefore.has(s.id));
    assert.deepEqual(made.map((s) => s.id), [], 'no sandbox was made');
    await t.stopKubelet();
  });
});
