// Preloaded into the kubelet's process by bench/soak.ts (`node --import`): every
// KTS_SOAK_PROBE_MS (default 10 s) it appends one JSON line to KTS_SOAK_PROBE_FILE with what
// only the process itself can tell: its pending timers, its active resources by type
// (process.getActiveResourcesInfo(): sockets, file requests, and the timers that keep the
// process alive) and its V8 heap. The probe's own interval is one of the timers, in every line.
//
// Timers: getActiveResourcesInfo() lists only ref'd ones, and most of a daemon's are unref'd.
// With `--expose-internals` (bench/soak.ts runs the kubelet so) the probe walks Node's own timer
// lists (internal/timers' timerListMap: one linked list per duration), which hold every pending
// setTimeout/setInterval and timers/promises timer, ref'd or not; async_hooks could count them
// too, but enabling its init hook slows every promise of the process it is measuring.
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * Every pending timer by its duration in ms (the lists' keys), or undefined where Node's
 * internals are not exposed (or changed shape). The durations say whose timers they are: a
 * probe's period, a backoff, a resync.
 */
let pendingTimers = () => undefined;
try {
  const { timerListMap } = createRequire(import.meta.url)('internal/timers');
  pendingTimers = () => {
    const byMs = {};
    let n = 0;
    for (const [ms, list] of Object.entries(timerListMap)) {
      let inList = 0;
      for (let t = list._idleNext; t && t !== list && n < 1e7; t = t._idleNext) n++, inList++;
      if (inList) byMs[ms] = inList;
    }
    return { n, byMs };
  };
} catch {
  // no --expose-internals: ref'd timers only, from the resources
}

const file = process.env.KTS_SOAK_PROBE_FILE;
if (file) {
  const every = Number(process.env.KTS_SOAK_PROBE_MS) > 0 ? Number(process.env.KTS_SOAK_PROBE_MS) : 10_000;
  const sample = () => {
    const resources = {};
    for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
    const m = process.memoryUsage();
    const timers = pendingTimers();
    try {
      appendFileSync(file, `${JSON.stringify({ at: Date.now(), timers: timers?.n, timersByMs: timers?.byMs, resources, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external })}\n`);
    } catch {
      // the soak's directory is gone: the run is over
    }
  };
  setInterval(sample, every).unref();
}
