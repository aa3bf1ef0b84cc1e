import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { LogRotation, nextPassDelayMs, rotationTimestamp } from '../../core/logs/log-rotation.ts';
import { silentLogger } from '../../core/logger.ts';
import type { ContainerRuntime } from '../../core/runtime/types.ts';

describe('container log rotation', function () {
  let dir: string;
  let log: string;
  let clock: Date;
  const reopened: string[] = [];
  let failReopen = false;

  const rotation = (maxFiles = 3) => new LogRotation({
    policy: { maxSizeBytes: 10, maxFiles, monitorIntervalMs: 1000 },
    runtime: () => ({
      reopenContainerLog: async (id: string) => {
        if (failReopen) throw new Error('container is not running');
        reopened.push(id);
        await fs.writeFile(log, ''); // the runtime opens a new file at the path
      },
    }) as unknown as ContainerRuntime,
    runningContainers: () => [{ id: 'c1', logPath: log }],
    logger: silentLogger(),
    now: () => clock,
  });

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'h15-logrot-'));
    log = path.join(dir, '0.log');
    clock = new Date('2026-01-02T03:04:05Z');
    reopened.length = 0;
    failReopen = false;
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  const tick = () => {
    clock = new Date(clock.getTime() + 1000);
  };

  it('passes come every second for a whole monitor interval after a rotation, then once an interval', function () {
    const policy = { maxSizeBytes: 1024, maxFiles: 3, monitorIntervalMs: 12_000 };
    assert.equal(nextPassDelayMs(policy, undefined), 12_000, 'nothing rotated yet');
    assert.equal(nextPassDelayMs(policy, 0), 1000, 'right after a rotation');
    // A writer that needs 1.5 s to fill the size again is still looked for every second.
    assert.equal(nextPassDelayMs(policy, 2_000), 1000);
    assert.equal(nextPassDelayMs(policy, 11_999), 1000);
    assert.equal(nextPassDelayMs(policy, 12_000), 12_000, 'an interval without a rotation: back to the interval');
    assert.equal(nextPassDelayMs({ ...policy, monitorIntervalMs: 500 }, 0), 500, 'never slower than the interval itself');
  });

  it('names rotated files as upstream (YYYYMMDD-hhmmss, UTC)', function () {
    assert.equal(rotationTimestamp(new Date('2026-01-02T03:04:05Z')), '20260102-030405');
  });

  it('rotates a file over the size, gzips older rotated files, keeps at most maxFiles', async function () {
    const r = rotation(3);
    await fs.writeFile(log, 'small');
    await r.rotateAll();
    assert.deepEqual(await fs.readdir(dir), ['0.log'], 'under the size: untouched');
    for (let i = 1; i <= 4; i++) {
      await fs.writeFile(log, `content number ${i}\n`);
      await r.rotateAll();
      tick();
    }
    assert.deepEqual(reopened, ['c1', 'c1', 'c1', 'c1']);
    const files = (await fs.readdir(dir)).sort();
    assert.deepEqual(files, ['0.log', '0.log.20260102-030407.gz', '0.log.20260102-030408']);
    assert.equal(gunzipSync(await fs.readFile(path.join(dir, '0.log.20260102-030407.gz'))).toString(), 'content number 3\n');
    assert.equal(await fs.readFile(path.join(dir, '0.log.20260102-030408'), 'utf8'), 'content number 4\n');
  });

  it('never replaces a file rotated in the same second: the rotation waits for the next pass', async function () {
    const r = rotation(3);
    await fs.writeFile(log, 'first content\n');
    await r.rotateAll();
    await fs.writeFile(log, 'second content\n');
    await r.rotateAll(); // the same second
    assert.deepEqual((await fs.readdir(dir)).sort(), ['0.log', '0.log.20260102-030405']);
    assert.equal(await fs.readFile(path.join(dir, '0.log.20260102-030405'), 'utf8'), 'first content\n');
    tick();
    await r.rotateAll();
    assert.deepEqual((await fs.readdir(dir)).sort(), ['0.log', '0.log.20260102-030405.gz', '0.log.20260102-030406']);
    assert.equal(await fs.readFile(path.join(dir, '0.log.20260102-030406'), 'utf8'), 'second content\n');
  });

  it('moves the writer to a new file before it compresses older ones', async function () {
    const r = rotation(3);
    await fs.writeFile(log, 'old content here\n');
    await r.rotateAll();
    tick();
    await fs.writeFile(log, 'newer content here\n');
    // The reopen sees the older rotated file still uncompressed: compression comes after.
    const seen: string[][] = [];
    const reopen = async () => {
      seen.push((await fs.readdir(dir)).sort());
      await fs.writeFile(log, '');
    };
    await new LogRotation({
      policy: { maxSizeBytes: 10, maxFiles: 3, monitorIntervalMs: 1000 },
      runtime: () => ({ reopenContainerLog: reopen }) as unknown as ContainerRuntime,
      runningContainers: () => [{ id: 'c1', logPath: log }],
      logger: silentLogger(),
      now: () => clock,
    }).rotateAll();
    assert.deepEqual(seen, [['0.log.20260102-030405', '0.log.20260102-030406']]);
    assert.deepEqual((await fs.readdir(dir)).sort(), ['0.log', '0.log.20260102-030405.gz', '0.log.20260102-030406']);
  });

  it('cleans up what an interrupted rotation left', async function () {
    await fs.writeFile(path.join(dir, '0.log.20260101-000000'), 'x');
    await fs.writeFile(path.join(dir, '0.log.20260101-000000.gz'), 'x');
    await fs.writeFile(path.join(dir, '0.log.20260101-000001.gz.tmp'), 'x');
    await fs.writeFile(log, 'a long enough line\n');
    await rotation(5).rotateAll();
    assert.deepEqual((await fs.readdir(dir)).sort(), ['0.log', '0.log.20260101-000000.gz', '0.log.20260102-030405']);
  });

  it('a reopen that fails puts the file back', async function () {
    failReopen = true;
    await fs.writeFile(log, 'a long enough line\n');
    await rotation().rotateAll();
    assert.deepEqual(await fs.readdir(dir), ['0.log']);
    assert.equal(await fs.readFile(log, 'utf8'), 'a long enough line\n');
  });
});
