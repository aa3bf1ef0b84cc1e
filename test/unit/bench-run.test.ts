import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHILD = path.join(REPO, 'test/support/bench-run-interrupted-child.ts');

/** The benchmark and fuzz runs' clean-up (bench/api/bench-run.ts) when a signal comes mid-run. */
describe('a benchmark run stopped by SIGTERM', function () {
  this.timeout(40_000);
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-bench-run-test-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('runs each cleanup once, newest first, one after another, even when the work ends during them; then exits 130 with its directory gone', async function () {
    const events = path.join(dir, 'events');
    const child = spawn(process.execPath, ['--conditions=kubelet-ts-source', '--import', 'tsx', CHILD, events], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d) => String(d).includes('ready') && resolve());
        child.on('exit', () => reject(new Error(`the child ended before it was ready: ${stderr}`)));
      });
      child.kill('SIGTERM');
      const code = await exited;
      const lines = (await fs.readFile(events, 'utf8')).trim().split('\n');
      const runDir = lines.shift()!.replace(/^dir /, '');
      assert.deepEqual(lines.filter((l) => l !== 'work done'), ['third start', 'third end', 'second start', 'second end', 'first start', 'first end'], `${lines.join(', ')}\n${stderr}`);
      assert.equal(code, 130, stderr);
      assert.equal(existsSync(runDir), false, `${runDir} is left`);
    } finally {
      clearTimeout(kill);
      child.kill('SIGKILL');
    }
  });
});
