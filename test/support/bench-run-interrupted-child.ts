/**
 * A benchmark run interrupted while its work is still going (bench-run.test.ts): three slow
 * cleanups, then `ready` on stdout; the parent sends SIGTERM and the work goes on 300 ms more,
 * as a fuzz batch under way does. What happens is appended to the file named by argv[2].
 */
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { withBenchRun } from '../../bench/api/bench-run.ts';

const events = process.argv[2]!;
const note = (line: string) => appendFileSync(events, `${line}\n`);

await withBenchRun(() => {}, async (run) => {
  note(`dir ${run.dir}`);
  for (const name of ['first', 'second', 'third']) {
    run.defer(name, async () => {
      note(`${name} start`);
      await sleep(200);
      note(`${name} end`);
    });
  }
  process.stdout.write('ready\n');
  // A signal listener alone does not keep Node's event loop alive: a timer does (bounded, 20 s).
  const alive = setTimeout(() => {}, 20_000);
  await new Promise((resolve) => process.once('SIGTERM', resolve));
  clearTimeout(alive);
  await sleep(300);
  note('work done');
});
note('returned');
