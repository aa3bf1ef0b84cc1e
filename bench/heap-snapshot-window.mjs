// A heap snapshot of a running kubelet at a moment the benchmark picks, not at its start:
// preloaded with `node --import bench/heap-snapshot-window.mjs bin/kubelet-ts.mjs ...`
// (bench:steady does it with HEAP_SNAPSHOT=DIR, at the end of its window, so the snapshot's own
// full GC and serialization, which double the RSS for a moment, are not in the figures). On
// SIGUSR2 it writes DIR/kubelet-<pid>-memory.json (process.memoryUsage(), V8's heap and space
// statistics, /proc/self/smaps_rollup, all before the snapshot's GC) and
// DIR/kubelet-<pid>.heapsnapshot (Chrome DevTools format; the snapshot collects garbage first,
// so it holds what is live). Once per process.
import v8 from 'node:v8';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.KTS_HEAP_SNAPSHOT_DIR ?? '.';
let taken = false;

process.on('SIGUSR2', () => {
  if (taken) return;
  taken = true;
  const memory = { memoryUsage: process.memoryUsage(), heap: v8.getHeapStatistics(), spaces: v8.getHeapSpaceStatistics(), smapsRollup: readFileSync('/proc/self/smaps_rollup', 'utf8') };
  writeFileSync(path.join(dir, `kubelet-${process.pid}-memory.json`), JSON.stringify(memory, null, 1));
  v8.writeHeapSnapshot(path.join(dir, `kubelet-${process.pid}.heapsnapshot`));
});
