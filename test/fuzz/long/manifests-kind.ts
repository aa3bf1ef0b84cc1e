/**
 * The manifests kind: generated manifests (manifest-cases.ts's random cases) dropped into the
 * kubelet's static pod directory through its real source path (watch, settle, read, parse,
 * validate, warn), in batches: `slots` files, each replaced in place (tmp + rename, as an
 * editor saves) by the next case, so the directory never grows past the slots and 100,000
 * cases cost 100,000 reads, not a directory of 100,000 files. A batch is done when the kubelet
 * logged its warning for every file of it (it warns once per change of a file).
 *
 * Cases the kubelet would accept are not dropped (counted apart): each would be a pod to
 * start in containerd, which is what the other fuzz levels and the API kind exercise.
 */
import { open, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadObjectModels } from '../../../core/objects/object-decoder.ts';
import { parseManifest } from '../../../core/sources/manifest.ts';
import { randomCase } from '../manifest-cases.ts';
import { closeReport, EXITED, memoryPoint, podDisturbed, RssSampler, settle, type KindReport, type MemoryPoint, type PodFacts } from './report.ts';
import type { FuzzedKubelet } from './requests-kind.ts';

export interface ManifestsRunOptions {
  kubelet: FuzzedKubelet;
  manifestDir: string;
  logFile: string;
  pod(): Promise<PodFacts | undefined>;
  podName: string;
  /** The kubelet's diagnostic report directory (reportOnSignalOptions), for its heap after each round. */
  reportDir?: string;
  seed: number;
  count: number;
  /** The first case's index (a reproduce line's). Default 0. */
  from?: number;
  /** Files replaced in place per batch. Default 100. */
  slots?: number;
  rounds?: number;
  settleMs?: number;
  /** How long a batch may take to be warned about. Default 60 s. */
  batchTimeoutMs?: number;
  deadline?: number;
  reproduce(index: number): string;
  log?(line: string): void;
}

/** Reads the lines a log file gained since the last call. */
class LogTail {
  private offset = 0;
  private rest = '';

  constructor(private readonly file: string) {}

  async skipToEnd(): Promise<void> {
    const fh = await open(this.file, 'r');
    try {
      this.offset = (await fh.stat()).size;
    } finally {
      await fh.close();
    }
  }

  async lines(): Promise<string[]> {
    const fh = await open(this.file, 'r');
    try {
      const size = (await fh.stat()).size;
      if (size <= this.offset) return [];
      const buf = Buffer.alloc(size - this.offset);
      await fh.read(buf, 0, buf.length, this.offset);
      this.offset = size;
      const text = this.rest + buf.toString('utf8');
      const parts = text.split('\n');
      this.rest = parts.pop() ?? '';
      return parts;
    } finally {
      await fh.close();
    }
  }
}

export async function runManifestsFuzz(o: ManifestsRunOptions): Promise<KindReport> {
  const log = o.log ?? (() => {});
  const t0 = performance.now();
  let exited = false;
  let exitCode: number | string | undefined;
  void o.kubelet.exited.then((c) => { exited = true; exitCode = c; });
  await loadObjectModels();
  const podBefore = await o.pod();
  if (!podBefore?.running) throw new Error(`${o.podName} is not Running before the fuzz`);
  const slots = o.slots ?? 100;
  const settleMs = o.settleMs ?? 10_000;
  const roundsN = Math.max(1, Math.min(o.rounds ?? 1, Math.ceil(o.count / slots)));
  const slotFile = (j: number) => path.join(o.manifestDir, `fuzz-slot-${j}.yaml`);
  const tail = new LogTail(o.logFile);
  await tail.skipToEnd();
  const rss = new RssSampler(o.kubelet.pid);
  const before = await rss.now();
  const rounds: MemoryPoint[] = [];
  const crashes: string[] = [];
  const reproduce: string[] = [];
  let generated = 0;
  let sent = 0;
  let accepted = 0;
  let unacknowledged = 0;
  let fatal = 0;
  let stoppedEarly: string | undefined;
  try {
    const batches = Math.ceil(o.count / slots);
    for (let b = 0; b < batches && !exited && !stoppedEarly; b++) {
      if (o.deadline !== undefined && performance.now() > o.deadline) {
        stoppedEarly = `time bound reached after ${generated} inputs`;
        break;
      }
      const first = b * slots;
      const waiting = new Map<string, number>();
      for (let i = first; i < Math.min(o.count, first + slots); i++) {
        const c = randomCase(o.seed, (o.from ?? 0) + i);
        generated++;
        try {
          parseManifest(c.text, '/x.yaml');
          accepted++;
          continue;
        } catch {
          // refused: the kind of input to drop
        }
        const file = slotFile(i - first);
        const tmp = path.join(o.manifestDir, `.fuzz-slot-${i - first}.tmp`);
        await writeFile(tmp, Buffer.from(c.text, 'utf8'));
        await rename(tmp, file);
        waiting.set(file, (o.from ?? 0) + i);
        sent++;
      }
      const until = performance.now() + (o.batchTimeoutMs ?? 60_000);
      while (waiting.size && !exited && performance.now() < until) {
        for (const line of await tail.lines()) {
          let l: { level?: number; file?: string };
          try {
            l = JSON.parse(line) as typeof l;
          } catch {
            continue;
          }
          if ((l.level ?? 0) >= 60) fatal++;
          if (l.level === 40 && l.file !== undefined) waiting.delete(l.file);
        }
        if (waiting.size) await sleep(50);
      }
      if (exited) {
        crashes.push(`${EXITED} (${exitCode}) during the batch of cases ${(o.from ?? 0) + first}..${(o.from ?? 0) + first + slots - 1}`);
        for (const i of waiting.values()) reproduce.push(o.reproduce(i));
        break;
      }
      unacknowledged += waiting.size;
      if (waiting.size) log(`manifests: batch ${b}: ${waiting.size} files not warned about within the batch timeout (cases ${[...waiting.values()].slice(0, 5).join(', ')})`);
      const roundEnd = Math.round(((rounds.length + 1) * batches) / roundsN);
      if (b + 1 === roundEnd || b + 1 === batches) {
        if (await settle(settleMs, () => exited)) break;
        rounds.push(await memoryPoint(o.kubelet.pid, o.reportDir, t0, sent));
        log(`manifests: round ${rounds.length}/${roundsN}: ${generated} generated, ${sent} dropped; RSS ${rounds.at(-1)!.rssMiB} MiB, heap ${rounds.at(-1)!.heapUsedMiB ?? '?'} MiB`);
      }
    }
    return await closeReport({
      kind: 'manifests', seed: o.seed, count: o.count, sent, crashes, reproduce, t0, rss, beforeBytes: before, settleMs, rounds, stoppedEarly,
      details: {
        generated,
        'valid (a pod; not dropped)': accepted,
        'dropped files the kubelet did not warn about in time': unacknowledged,
        'fatal log lines': fatal,
        slots,
      },
      exit: exited ? { code: exitCode ?? '?' } : undefined,
      disturbed: async () => { const why = podDisturbed(podBefore, await o.pod()); return why && `${o.podName}: ${why}`; },
    });
  } finally {
    rss.stop();
    await Promise.all(Array.from({ length: slots }, (_, j) => rm(slotFile(j), { force: true })));
  }
}
