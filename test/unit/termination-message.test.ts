import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ANNOTATION, LABEL } from '../../core/runtime/labels.ts';
import type { ContainerStatus } from '../../core/runtime/types.ts';
import {
  TerminationMessagePathError, readBoundedTail, readTerminationMessage, removeTerminationMessageFile, terminationMessageMount, withTerminationMessage,
} from '../../core/pod/termination-message.ts';

const UID = 'pod-uid-1';

describe('termination messages (upstream makeMounts / getTerminationMessage)', () => {
  let dir: string;
  let rootDir: string;
  let logDir: string;

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-tm-'));
    rootDir = path.join(dir, 'root');
    logDir = path.join(dir, 'logs');
    await fs.mkdir(logDir, { recursive: true });
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** An exited instance whose termination message file is `hostPath` (mounted at /dev/termination-log). */
  function exited(o: { hostPath?: string; exitCode?: number; policy?: string; log?: string; message?: string; reason?: string }): ContainerStatus {
    return {
      id: 'c1', podSandboxId: 'sb', metadata: { name: 'main', attempt: 0 }, image: 'busybox', imageRef: 'sha256:x',
      state: 'CONTAINER_EXITED', createdAt: 1, startedAt: 2, finishedAt: 3, exitCode: o.exitCode ?? 0, reason: o.reason ?? '', message: o.message ?? '',
      labels: { [LABEL.podUID]: UID },
      annotations: { [ANNOTATION.containerTerminationMessagePath]: '/dev/termination-log', [ANNOTATION.containerTerminationMessagePolicy]: o.policy ?? 'File' },
      logPath: o.log ?? path.join(logDir, 'none.log'),
      mounts: o.hostPath ? [{ containerPath: '/dev/termination-log', hostPath: o.hostPath }] : [],
    };
  }

  async function newFile(content: string): Promise<string> {
    const m = await terminationMessageMount(rootDir, UID, { name: 'main', image: 'x' });
    await fs.writeFile(m!.hostPath, content);
    return m!.hostPath;
  }

  /** A CRI log with one `F` record per line. */
  async function criLog(lines: string[]): Promise<string> {
    const file = path.join(logDir, '0.log');
    await fs.writeFile(file, lines.map((l) => `2024-05-01T10:00:00.000000000Z stdout F ${l}\n`).join(''));
    return file;
  }

  it('makes a new 0666 file per instance under <rootDir>/pods/<uid>/containers/<name>', async () => {
    const a = await terminationMessageMount(rootDir, UID, { name: 'main', image: 'x' });
    const b = await terminationMessageMount(rootDir, UID, { name: 'main', image: 'x', terminationMessagePath: '/tmp/msg' });
    assert.equal(path.dirname(a!.hostPath), path.join(rootDir, 'pods', UID, 'containers', 'main'));
    assert.match(path.basename(a!.hostPath), /^[0-9a-f]{8}$/);
    assert.notEqual(a!.hostPath, b!.hostPath);
    assert.equal(a!.containerPath, '/dev/termination-log');
    assert.equal(b!.containerPath, '/tmp/msg');
    assert.equal(a!.readonly, false);
    assert.equal((await fs.stat(a!.hostPath)).mode & 0o777, 0o666);
    assert.equal(await terminationMessageMount(rootDir, UID, { name: 'main', image: 'x', terminationMessagePath: '' }), undefined);
    await assert.rejects(terminationMessageMount(rootDir, UID, { name: 'main', image: 'x', terminationMessagePath: 'relative' }), TerminationMessagePathError);
    await assert.rejects(terminationMessageMount(rootDir, UID, { name: '../escape', image: 'x' }), TerminationMessagePathError);
  });

  it('reads the file, at most its last 4096 bytes', async () => {
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ hostPath: await newFile('bye') })), 'bye');
    const big = 'a'.repeat(5000) + 'END';
    const msg = await readTerminationMessage(rootDir, UID, exited({ hostPath: await newFile(big) }));
    assert.equal(msg.length, 4096);
    assert.ok(msg.endsWith('aEND'));
  });

  it('FallbackToLogsOnError: an empty file and a non-zero exit give the last 80 lines, at most 2048 bytes', async () => {
    const log = await criLog(Array.from({ length: 100 }, (_, i) => `line${i + 1}`));
    const expected = Array.from({ length: 80 }, (_, i) => `line${i + 21}\n`).join('');
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ hostPath: await newFile(''), exitCode: 1, policy: 'FallbackToLogsOnError', log })), expected);
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ hostPath: await newFile(''), exitCode: 0, policy: 'FallbackToLogsOnError', log })), '', 'not on success');
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ hostPath: await newFile('file'), exitCode: 1, policy: 'FallbackToLogsOnError', log })), 'file', 'the file wins');
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ hostPath: await newFile(''), exitCode: 1, policy: 'File', log })), '', 'policy File: no fallback');
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ exitCode: 1, policy: 'FallbackToLogsOnError', log })), expected, 'no file at all: the logs');
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ hostPath: await newFile(''), exitCode: 128, reason: 'ContainerCannotRun', policy: 'FallbackToLogsOnError', log })), '', 'a container that never ran has no logs');
    const long = await criLog(Array.from({ length: 80 }, (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(60)}`));
    const tail = await readTerminationMessage(rootDir, UID, exited({ hostPath: await newFile(''), exitCode: 2, policy: 'FallbackToLogsOnError', log: long }));
    assert.equal(Buffer.byteLength(tail), 2048);
    assert.ok(tail.endsWith(`79${'x'.repeat(60)}\n`));
  });

  it('never follows a symlink, never reads what is not a regular file, never reads outside the container\'s dir', async () => {
    const secret = path.join(dir, 'secret');
    await fs.writeFile(secret, 'HOST-SECRET');
    const file = await newFile('');
    await fs.rm(file);
    await fs.symlink(secret, file);
    const msg = await readTerminationMessage(rootDir, UID, exited({ hostPath: file, exitCode: 1 }));
    assert.equal(msg, `Error on reading termination log ${file}: it is a symbolic link, which is not followed`);
    await assert.rejects(readBoundedTail(file, 10), { code: 'ELOOP' });

    const fifo = await newFile('');
    await fs.rm(fifo);
    execFileSync('mkfifo', [fifo]);
    const fifoMsg = await readTerminationMessage(rootDir, UID, exited({ hostPath: fifo }));
    assert.equal(fifoMsg, `Error on reading termination log ${fifo}: not a regular file`, 'a FIFO is not read (and does not block)');

    // A mount the kubelet did not make (adopted from elsewhere): not read at all.
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ hostPath: secret })), '');
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ hostPath: path.join(rootDir, 'pods', UID, 'containers', 'main', '..', '..', '..', '..', '..', 'secret') })), '');
    // Gone: no message (upstream: os.IsNotExist).
    assert.equal(await readTerminationMessage(rootDir, UID, exited({ hostPath: path.join(rootDir, 'pods', UID, 'containers', 'main', 'deadbeef') })), '');
  });

  it('joins the runtime message and the termination message; removes the file with the instance', async () => {
    const file = await newFile('bye');
    const s = await withTerminationMessage(rootDir, exited({ hostPath: file, message: 'OOMKilled' }));
    assert.equal(s.message, 'OOMKilled: bye');
    assert.equal((await withTerminationMessage(rootDir, exited({ hostPath: file }))).message, 'bye');
    const running = { ...exited({ hostPath: file }), state: 'CONTAINER_RUNNING' as const };
    assert.equal(await withTerminationMessage(rootDir, running), running);
    await removeTerminationMessageFile(rootDir, exited({ hostPath: file }));
    await assert.rejects(fs.lstat(file), { code: 'ENOENT' });
    const secret = path.join(dir, 'keep');
    await fs.writeFile(secret, 'x');
    await removeTerminationMessageFile(rootDir, exited({ hostPath: secret }));
    assert.equal(await fs.readFile(secret, 'utf8'), 'x', 'a file elsewhere is never removed');
  });
});
