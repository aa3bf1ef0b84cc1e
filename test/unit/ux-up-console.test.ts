/**
 * Issue 17: the console of scripts/up.sh. A dead console (tee killed by Ctrl-C) must not kill
 * the launcher before it cleaned up; pods sharing a name must not flap; long messages wrap,
 * never cut; the kubelet's warnings reach the console in plain words; the pods' cgroups go
 * at the stop; the node's files stay in its own dir.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Pod } from '@kubernetes/client-node';
import { UpConsole, wrap } from '../../tools/up/console.ts';
import { PodLineTracker, podLine } from '../../tools/up/pod-lines.ts';
import { describeLogLine, KubeletWarningFollower } from '../../tools/up/kubelet-warnings.ts';
import { removePodCgroups, podUidsUnder } from '../../tools/up/pod-cgroup-cleanup.ts';
import { parseUpOptions } from '../../tools/up/options.ts';
import { TextSink } from '../support/text-sink.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function pod(name: string, uid: string, status: V1Pod['status'], deleting = false): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid, ...(deleting ? { deletionTimestamp: new Date() } : {}) },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
    status,
  } as V1Pod;
}

describe('ux: the up console', function () {
  this.timeout(20_000);
  let dir: string;
  beforeEach(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), 'h17-console-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  it('keeps running, and finishes its stop, when the reader of its pipe is gone (EPIPE)', async () => {
    // The launcher's situation under `scripts/up.sh | tee log` and Ctrl-C: tee dies first, then
    // the stop writes "stopping the kubelet...".
    const marker = path.join(dir, 'stopped');
    const script = path.join(dir, 'say.mts');
    await fs.writeFile(script, `
      import { writeFileSync } from 'node:fs';
      import { UpConsole } from ${JSON.stringify(path.join(REPO, 'tools/up/console.ts'))};
      const con = new UpConsole(process.stdout);
      con.say('first line');
      process.stdin.once('end', async () => {
        // The reader is gone now: every write below hits a closed pipe.
        for (let i = 0; i < 50; i++) { con.say('stopping the kubelet (SIGTERM)...'); await new Promise((r) => setTimeout(r, 5)); }
        writeFileSync(${JSON.stringify(marker)}, String(con.open));
        process.exit(0);
      });
      process.stdin.resume();
    `);
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const first = await new Promise<string>((resolve) => child.stdout.once('data', (d) => resolve(String(d))));
    assert.match(first, /first line/);
    child.stdout.destroy();
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    assert.equal(code, 0, stderr);
    assert.equal(await fs.readFile(marker, 'utf8'), 'false', 'the console knows it is gone');
    assert.doesNotMatch(stderr, /EPIPE/);
  });

  it('wraps long lines under the text instead of cutting them', () => {
    const out = new TextSink();
    const con = new UpConsole(out, () => new Date('2026-11-22T10:11:12'));
    const cause = 'failed to resolve reference "127.0.0.1:5050/nope:1": 127.0.0.1:5050/nope:1: not found';
    con.say(`default/broken-vm  ImagePullBackOff  ready 0/1  ip 10.88.0.5  restarts 0  app: ErrImagePull (rpc error: code = NotFound desc = ${cause})`);
    const lines = out.text.trimEnd().split('\n');
    assert.ok(lines.length >= 2, out.text);
    assert.ok(lines.every((l) => l.length <= 120), out.text);
    assert.match(lines[0]!, /^10:11:12 {2}default\/broken-vm/);
    assert.ok(lines.slice(1).every((l) => l.startsWith(' '.repeat(10))), out.text);
    assert.equal(lines.map((l) => l.trim()).join(' ').replace(/^10:11:12 {2}/, '').includes(cause), true, 'nothing of the cause is lost');
    assert.equal(wrap('short', 80, 4), 'short');
  });

  it('a pod line keeps the whole waiting message (ErrImagePull was cut at 120 characters)', () => {
    const message = `rpc error: code = NotFound desc = failed to pull and unpack image "127.0.0.1:5050/app:1": ${'x'.repeat(150)} THE CAUSE`;
    const line = podLine(pod('web-vm', 'u1', { phase: 'Pending', containerStatuses: [{ name: 'app', ready: false, restartCount: 0, image: '', imageID: '', state: { waiting: { reason: 'ErrImagePull', message } } }] }));
    assert.match(line, /^default\/web-vm {2}ErrImagePull {2}ready 0\/1 .*app: ErrImagePull \(rpc error: .*THE CAUSE\)$/);
  });

  it('pods sharing a name (an edited manifest) are tracked by UID: each line once, not alternating every poll', () => {
    const tracker = new PodLineTracker();
    const old = pod('hello-vm', 'aaaaaaaa-1', { phase: 'Running', containerStatuses: [{ name: 'app', ready: true, restartCount: 0, image: '', imageID: '', state: { running: {} } }] }, true);
    const replacement = pod('hello-vm', 'bbbbbbbb-2', { phase: 'Pending', containerStatuses: [{ name: 'app', ready: false, restartCount: 0, image: '', imageID: '', state: { waiting: { reason: 'ContainerCreating' } } }] });
    const printed: string[] = [];
    for (let poll = 0; poll < 20; poll++) printed.push(...tracker.update([old, replacement]));
    assert.deepEqual(printed, [
      'default/hello-vm (uid aaaaaaaa)  Terminating  ready 1/1  ip -  restarts 0',
      'default/hello-vm (uid bbbbbbbb)  ContainerCreating  ready 0/1  ip -  restarts 0  app: ContainerCreating',
    ]);
    assert.deepEqual(tracker.update([replacement]), ['default/hello-vm (uid aaaaaaaa)  removed'], 'the other pod of the name still runs: the UID says which went');
    assert.deepEqual([...tracker.seenUids].sort(), ['aaaaaaaa-1', 'bbbbbbbb-2']);
  });

  it('says the kubelet\'s warnings in plain words: manifest errors with file and line, pull failures with their cause, crash loops', () => {
    const say = (line: object) => describeLogLine(line, REPO);
    assert.equal(
      say({ level: 40, msg: 'invalid static pod manifest; its pod keeps running as last read', file: path.join(REPO, 'examples/web.yaml'), err: `static pod manifest ${path.join(REPO, 'examples/web.yaml')}: not valid YAML or JSON: line 12, column 1: unexpected end of the stream within a flow collection` }),
      'warning: examples/web.yaml: not valid YAML or JSON: line 12, column 1: unexpected end of the stream within a flow collection; its pod keeps running as last read',
    );
    assert.equal(
      say({ level: 40, event: 'Failed', object: 'pod/default/broken-vm', msg: 'Failed to pull image "127.0.0.1:5050/nope:1": not found' }),
      'warning: default/broken-vm: Failed to pull image "127.0.0.1:5050/nope:1": not found',
    );
    assert.equal(say({ level: 40, event: 'BackOff', object: 'pod/default/crash-vm', msg: 'Back-off restarting failed container app in pod crash-vm_default(u1)' }), 'warning: default/crash-vm: Back-off restarting failed container app in pod crash-vm_default(u1)');
    assert.equal(say({ level: 40, event: 'Failed', object: 'pod/default/broken-vm', msg: 'Error: ErrImagePull' }), undefined, 'the reason alone adds nothing');
    assert.equal(say({ level: 40, msg: 'image pull failed', pod: 'default/broken-vm', err: 'not found' }), undefined, 'the event says it better');
    assert.equal(say({ level: 30, msg: 'pod added' }), undefined);
    assert.equal(say({ level: 50, msg: 'housekeeping failed', err: 'boom' }), 'error: housekeeping failed: boom');
  });

  it('follows the kubelet log: new warnings once, a repeat counted and not printed again', async () => {
    const log = path.join(dir, 'kubelet.log');
    const said: string[] = [];
    const follower = new KubeletWarningFollower({ file: log, cwd: REPO, say: (t) => said.push(t) });
    await follower.poll(); // no file yet: nothing, no throw
    const pull = JSON.stringify({ level: 40, event: 'Failed', object: 'pod/default/b-vm', msg: 'Failed to pull image "x": not found' });
    await fs.writeFile(log, `${JSON.stringify({ level: 30, msg: 'kubelet started' })}\n${pull}\n{"level":40,"msg":"half a li`);
    await follower.poll();
    await fs.appendFile(log, `ne","err":"done"}\n${pull}\n${pull}\n`);
    await follower.poll();
    assert.deepEqual(said, ['warning: default/b-vm: Failed to pull image "x": not found', 'warning: half a line: done']);
  });

  it('removes the pod cgroups of the node\'s pods only, wherever their QoS class put them', async () => {
    const mounts = new Map([['memory', path.join(dir, 'memory')], ['cpu', path.join(dir, 'cpu')]]);
    const mine = ['11111111-aaaa', '22222222-bbbb'];
    const other = '33333333-cccc';
    for (const m of mounts.values()) {
      await fs.mkdir(path.join(m, 'kubepods', 'besteffort', `pod${mine[0]}`, 'container-left-by-runc'), { recursive: true });
      await fs.mkdir(path.join(m, 'kubepods', 'burstable', `pod${mine[1]}`), { recursive: true });
      await fs.mkdir(path.join(m, 'kubepods', 'besteffort', `pod${other}`), { recursive: true });
    }
    const rootDir = path.join(dir, 'kubelet');
    await fs.mkdir(path.join(rootDir, 'pods', mine[1]!), { recursive: true });
    await removePodCgroups([mine[0]!, ...(await podUidsUnder(rootDir))], { mounts: { version: 1, v1: mounts, unified: undefined } });
    for (const m of mounts.values()) {
      assert.deepEqual(await fs.readdir(path.join(m, 'kubepods', 'besteffort')), [`pod${other}`]);
      assert.deepEqual(await fs.readdir(path.join(m, 'kubepods', 'burstable')), []);
    }
  });

  it('options: everything under the node dir, flags over the environment, mistakes named', () => {
    const o = parseUpOptions(['--node-dir', '/tmp/h17-node', '--read-only-port', '10299'], REPO, { KUBELET_TS_REGISTRY_PORT: '5099' });
    assert.deepEqual(o, { nodeDir: '/tmp/h17-node', manifests: path.join(REPO, 'examples'), registryPort: 5099, readOnlyPort: 10299, help: false });
    assert.equal(parseUpOptions([], REPO, {}).nodeDir, path.join(REPO, '.node'));
    assert.throws(() => parseUpOptions(['--registry-port', 'x'], REPO, {}), /--registry-port: 'x' is not a port number/);
    assert.throws(() => parseUpOptions(['--node-dri', 'x'], REPO, {}), /unknown flag '--node-dri' \(did you mean --node-dir\?\)/);
    assert.throws(() => parseUpOptions(['examples'], REPO, {}), /unexpected argument 'examples'/);
  });
});
