/**
 * What a fuzz run of one kind reports, and the measurements every kind shares: the kubelet's
 * RSS sampled from /proc (before, peak, after a settle), its own view of its memory from
 * /metrics (V8 heap in use, external memory: the split between JavaScript objects and what
 * malloc keeps), and whether a pod it ran before the fuzz is still the same pod.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { procCpuSeconds, procRssBytes } from '../../support/kubelet-process.ts';
import { MiB } from '../fuzz-checks.ts';

export interface MemoryPoint {
  /** Seconds since the kind started. */
  at: number;
  rssMiB: number;
  /** From the kubelet's diagnostic report (reportOnSignalOptions): V8 heap in use and committed, libuv handles open. */
  heapUsedMiB?: number;
  heapTotalMiB?: number;
  handles?: number;
  /** Inputs sent so far. */
  sent: number;
}

export interface KindReport {
  kind: string;
  seed: number;
  /** Inputs asked for. */
  count: number;
  /** Inputs that reached the kubelet. */
  sent: number;
  /** The kubelet exited, or its pod was disturbed: each with the index it happened at. */
  crashes: string[];
  /** Reproduce lines for the failures (seed + index). */
  reproduce: string[];
  durationS: number;
  rss: { beforeMiB: number; peakMiB: number; afterMiB: number; settleS: number };
  /** CPU seconds the kubelet used from the kind's start to its end (its settles included). */
  kubeletCpuS?: number;
  /** Other processes' CPU seconds over the kind's run (the api-pods kind: the control plane's, from before its sentinel pod). */
  otherCpuS?: Record<string, number>;
  /** Memory after each round (after its settle), to tell a leak (growth round over round) from a high-water mark. */
  rounds: MemoryPoint[];
  /** Kind-specific tallies (answers by status, refusals by reason, ...). */
  details: Record<string, unknown>;
  /** Stopped early (time bound), with why. */
  stoppedEarly?: string;
}

export const toMiB = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;

/** Samples a process's RSS every `intervalMs` and keeps the peak. */
export class RssSampler {
  peak = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The kubelet's CPU seconds when sampling began. */
  private readonly cpuAtStart: Promise<number | undefined>;

  constructor(private readonly pid: number, intervalMs = 200) {
    this.cpuAtStart = procCpuSeconds(pid);
    this.timer = setInterval(() => void procRssBytes(pid).then((r) => (this.peak = Math.max(this.peak, r)), () => undefined), intervalMs);
  }

  /** CPU seconds the process used since sampling began (undefined once it is gone). */
  async cpuSeconds(): Promise<number | undefined> {
    const [start, now] = [await this.cpuAtStart, await procCpuSeconds(this.pid)];
    return start === undefined || now === undefined ? undefined : Math.round((now - start) * 10) / 10;
  }

  async now(): Promise<number> {
    const r = await procRssBytes(this.pid);
    this.peak = Math.max(this.peak, r);
    return r;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

/**
 * The environment that lets memoryPoint see inside the kubelet without an inspector: Node's
 * diagnostic report on SIGUSR2 (V8 heap in use and committed, open libuv handles), written to
 * `dir`. The kubelet gets it by inheriting NODE_OPTIONS.
 */
export function reportOnSignalOptions(dir: string): string {
  return `${process.env.NODE_OPTIONS ?? ''} --report-on-signal --report-signal=SIGUSR2 --report-directory=${dir} --report-compact`.trim();
}

interface DiagnosticReport {
  javascriptHeap?: { usedMemory?: number; totalMemory?: number };
  libuv?: Array<{ type?: string; is_active?: boolean }>;
}

/** Asks the process for a diagnostic report (see reportOnSignalOptions) and reads it; undefined when none comes within 5 s. */
async function diagnosticReport(pid: number, dir: string): Promise<DiagnosticReport | undefined> {
  const before = new Set(await readdir(dir).catch(() => [] as string[]));
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 50; i++) {
    await sleep(100);
    const fresh = (await readdir(dir).catch(() => [] as string[])).find((f) => !before.has(f) && f.endsWith('.json'));
    if (!fresh) continue;
    // Written in one go, but give a slow write a moment.
    for (let j = 0; j < 10; j++) {
      try {
        const r = JSON.parse(await readFile(path.join(dir, fresh), 'utf8')) as DiagnosticReport;
        await rm(path.join(dir, fresh), { force: true });
        return r;
      } catch {
        await sleep(100);
      }
    }
  }
  return undefined;
}

/** RSS from /proc and, when `reportDir` is the kubelet's report directory, its V8 heap and open handles. */
export async function memoryPoint(pid: number, reportDir: string | undefined, t0: number, sent: number): Promise<MemoryPoint> {
  const rss = await procRssBytes(pid);
  const r = reportDir ? await diagnosticReport(pid, reportDir).catch(() => undefined) : undefined;
  const used = r?.javascriptHeap?.usedMemory;
  const total = r?.javascriptHeap?.totalMemory;
  return {
    at: Math.round((performance.now() - t0) / 100) / 10,
    rssMiB: toMiB(rss),
    ...(used !== undefined ? { heapUsedMiB: toMiB(used) } : {}),
    ...(total !== undefined ? { heapTotalMiB: toMiB(total) } : {}),
    ...(r?.libuv ? { handles: r.libuv.length } : {}),
    sent,
  };
}

/** The facts of a pod that a fuzz must not change: same UID, Running, no container restarted. */
export interface PodFacts {
  uid: string;
  running: boolean;
  restarts: number;
}

export function podFacts(p: V1Pod | undefined): PodFacts | undefined {
  if (!p?.metadata?.uid) return undefined;
  const statuses = p.status?.containerStatuses ?? [];
  return {
    uid: p.metadata.uid,
    running: p.status?.phase === 'Running' && statuses.length > 0 && statuses.every((c) => c.state?.running !== undefined),
    restarts: statuses.reduce((n, c) => n + (c.restartCount ?? 0), 0),
  };
}

/** Why the pod now differs from the pod before, or undefined. */
export function podDisturbed(before: PodFacts, now: PodFacts | undefined): string | undefined {
  if (!now) return 'the pod is gone';
  if (now.uid !== before.uid) return `the pod has another UID (${now.uid}, was ${before.uid})`;
  if (!now.running) return 'the pod is no longer Running';
  if (now.restarts !== before.restarts) return `a container restarted (${now.restarts} restarts, were ${before.restarts})`;
  return undefined;
}

/** What a kind gathered by its end, for {@link closeReport}. */
export interface KindEnd extends Pick<KindReport, 'kind' | 'seed' | 'count' | 'sent' | 'crashes' | 'reproduce' | 'rounds' | 'details'> {
  t0: number;
  rss: RssSampler;
  beforeBytes: number;
  settleMs: number;
  stoppedEarly: string | undefined;
  /** The kubelet's exit (undefined: still running). */
  exit: { code: number | string } | undefined;
  /** Why the kubelet's own pod now differs from before (undefined: it does not); asked only when nothing crashed. */
  disturbed(): Promise<string | undefined>;
}

/**
 * The signal that interrupted the whole run (SIGINT, SIGTERM), if one did: the kubelet is in the
 * same process group and got it too, so its exit then is the operator's doing, not a crash.
 */
let interruptedBy: string | undefined;

/** How every kind words the kubelet's exit in its crashes. */
export const EXITED = 'the kubelet exited';

/** Called by the run's signal handler (tools/fuzz-long.ts). */
export function noteInterrupted(signal: string): void {
  interruptedBy = signal;
}

/** The last checks every kind makes (the kubelet alive, its pod the same pod, the RSS after) and the report. */
export async function closeReport(e: KindEnd): Promise<KindReport> {
  let crashes = [...e.crashes];
  let stoppedEarly = e.stoppedEarly;
  if (e.exit && interruptedBy) {
    // The kinds record the kubelet's exit as they see it; an interrupted run's is no crash.
    crashes = crashes.filter((c) => !c.startsWith(EXITED));
    stoppedEarly = `interrupted by ${interruptedBy} (the kubelet was stopped and exited ${e.exit.code}): not a crash`;
  } else if (e.exit && crashes.length === 0) crashes.push(`${EXITED} (${e.exit.code})`);
  if (!e.exit && crashes.length === 0) {
    const why = await e.disturbed();
    if (why) crashes.push(why);
  }
  const after = e.exit ? 0 : await e.rss.now().catch(() => 0);
  const cpu = e.exit ? undefined : await e.rss.cpuSeconds();
  return {
    kind: e.kind,
    seed: e.seed,
    count: e.count,
    sent: e.sent,
    crashes,
    reproduce: e.reproduce,
    durationS: Math.round((performance.now() - e.t0) / 1000),
    rss: { beforeMiB: toMiB(e.beforeBytes), peakMiB: toMiB(e.rss.peak), afterMiB: toMiB(after), settleS: e.settleMs / 1000 },
    ...(cpu !== undefined ? { kubeletCpuS: cpu } : {}),
    rounds: e.rounds,
    details: e.details,
    ...(stoppedEarly ? { stoppedEarly } : {}),
  };
}

/** Waits `ms`, returning early (true) when `exited` is set. */
export async function settle(ms: number, exited: () => boolean): Promise<boolean> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    if (exited()) return true;
    await sleep(Math.min(250, until - performance.now()));
  }
  return exited();
}

/** The report as the lines `npm run fuzz:long` prints. */
export function formatReport(r: KindReport): string {
  const lines = [
    `${r.kind}: seed ${r.seed}, ${r.sent} of ${r.count} inputs in ${r.durationS} s, ${r.crashes.length} crash${r.crashes.length === 1 ? '' : 'es'}${r.stoppedEarly ? ` (stopped early: ${r.stoppedEarly})` : ''}`,
    `  kubelet RSS: ${r.rss.beforeMiB} MiB before, peak ${r.rss.peakMiB} MiB, ${r.rss.afterMiB} MiB ${r.rss.settleS} s after`,
  ];
  if (r.kubeletCpuS !== undefined || r.otherCpuS) lines.push(`  CPU seconds: kubelet ${r.kubeletCpuS ?? '?'}${Object.entries(r.otherCpuS ?? {}).map(([k, v]) => `, ${k} ${v}`).join('')}`);
  if (r.rounds.length) lines.push(`  after each round (settled): ${r.rounds.map((p) => `${p.sent}: RSS ${p.rssMiB}${p.heapUsedMiB !== undefined ? ` heap ${p.heapUsedMiB}` : ''}${p.heapTotalMiB !== undefined ? `/${p.heapTotalMiB}` : ''}${p.handles !== undefined ? ` handles ${p.handles}` : ''}`).join('; ')} (MiB)`);
  for (const [k, v] of Object.entries(r.details)) lines.push(`  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  for (const c of r.crashes) lines.push(`  CRASH: ${c}`);
  for (const x of r.reproduce) lines.push(`  reproduce: ${x}`);
  return lines.join('\n');
}
