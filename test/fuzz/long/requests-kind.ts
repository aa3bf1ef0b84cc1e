/**
 * The requests kind: hostile requests (request-cases.ts) to the main port's handlers through
 * the kubelet's local socket (the same handlers and routes as port 10250, without TLS and
 * authentication in front: what is fuzzed is what runs after a request is admitted), a number
 * of connections at once, in rounds. After each round the kubelet settles and its memory is
 * read, so growth round over round (a leak) shows apart from a high-water mark.
 */
import net from 'node:net';
import { requestCase, type RequestTarget } from '../request-cases.ts';
import { closeReport, EXITED, memoryPoint, podDisturbed, RssSampler, settle, type KindReport, type MemoryPoint, type PodFacts } from './report.ts';

export interface FuzzedKubelet {
  pid: number;
  exited: Promise<number | string>;
}

export interface RequestsRunOptions {
  kubelet: FuzzedKubelet;
  socketPath: string;
  target: RequestTarget;
  /** The target pod now (undefined when it is gone). */
  pod(): Promise<PodFacts | undefined>;
  /** The kubelet's diagnostic report directory (reportOnSignalOptions), for its heap after each round. */
  reportDir?: string;
  seed: number;
  count: number;
  /** The first case's index (a reproduce line's). Default 0. */
  from?: number;
  /** Connections at once. Default 32. */
  concurrency?: number;
  /** Rounds the count is split into (memory read after each). Default 1. */
  rounds?: number;
  /** The settle after each round and at the end. Default 10 s. */
  settleMs?: number;
  /** Stop sending at this time (performance.now()). */
  deadline?: number;
  reproduce(index: number): string;
  log?(line: string): void;
}

interface Answer {
  /** The status of the first response, 0 when none came. */
  status: number;
  /** The connection failed before anything was written (the socket refused). */
  refused: boolean;
}

/** Sends one case and waits for the first answer (or the case's hold, or the close). */
function send(socketPath: string, bytes: Buffer, endWrite: boolean, holdMs: number, holdAfterAnswer: boolean): Promise<Answer> {
  return new Promise((resolve) => {
    const s = net.connect({ path: socketPath });
    let status = 0;
    let connected = false;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ status, refused: !connected });
    };
    // Bounded whatever the kubelet does: the hold, plus a margin for a slow first answer.
    const timer = setTimeout(finish, holdMs + 1000);
    s.on('error', finish);
    s.on('close', finish);
    s.once('connect', () => {
      connected = true;
      s.write(bytes, () => {
        if (endWrite) s.end();
      });
    });
    s.on('data', (d: Buffer) => {
      if (status === 0) {
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(d.subarray(0, 16).toString('latin1'));
        status = m ? Number(m[1]) : -1;
        // Keep-alive: the kubelet keeps the connection; a held case keeps it until its hold.
        if (!holdAfterAnswer) setTimeout(finish, 10);
        else {
          clearTimeout(timer);
          setTimeout(finish, holdMs);
        }
      }
    });
  });
}

export async function runRequestsFuzz(o: RequestsRunOptions): Promise<KindReport> {
  const log = o.log ?? (() => {});
  const t0 = performance.now();
  let exited = false;
  let exitCode: number | string | undefined;
  void o.kubelet.exited.then((c) => { exited = true; exitCode = c; });
  const podBefore = await o.pod();
  if (!podBefore?.running) throw new Error('the target pod is not Running before the fuzz');
  const rss = new RssSampler(o.kubelet.pid);
  const before = await rss.now();
  const rounds: MemoryPoint[] = [];
  const statuses = new Map<string, number>();
  const serverErrors: number[] = [];
  const crashes: string[] = [];
  const reproduce: string[] = [];
  let refused = 0;
  let sent = 0;
  let stoppedEarly: string | undefined;
  const roundsN = Math.max(1, Math.min(o.rounds ?? 1, o.count));
  const concurrency = o.concurrency ?? 32;
  const settleMs = o.settleMs ?? 10_000;
  try {
    for (let round = 0; round < roundsN && !exited && !stoppedEarly; round++) {
      const end = Math.round(((round + 1) * o.count) / roundsN);
      let next = Math.round((round * o.count) / roundsN);
      const worker = async () => {
        while (next < end && !exited) {
          if (o.deadline !== undefined && performance.now() > o.deadline) {
            stoppedEarly ??= `time bound reached after ${sent} inputs`;
            return;
          }
          const i = (o.from ?? 0) + next++;
          const c = requestCase(o.seed, i, o.target);
          const held = /^(stalled|half-open)/.test(c.kind);
          const a = await send(o.socketPath, c.bytes, c.endWrite, c.holdMs, held);
          sent++;
          if (a.refused) refused++;
          const key = a.status === 0 ? 'none' : a.status === -1 ? 'not HTTP' : String(a.status);
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
          if (a.status >= 500 && a.status !== 501 && a.status !== 503 && serverErrors.length < 20) serverErrors.push(i);
          if (exited && crashes.length === 0) {
            crashes.push(`${EXITED} (${exitCode}) at or before case ${i} (${c.kind})`);
            reproduce.push(o.reproduce(i));
          }
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      if (await settle(settleMs, () => exited)) break;
      rounds.push(await memoryPoint(o.kubelet.pid, o.reportDir, t0, sent));
      log(`requests: round ${round + 1}/${roundsN}: ${sent} sent; RSS ${rounds.at(-1)!.rssMiB} MiB, heap ${rounds.at(-1)!.heapUsedMiB ?? '?'} MiB`);
    }
    return await closeReport({
      kind: 'requests', seed: o.seed, count: o.count, sent, crashes, t0, rss, beforeBytes: before, settleMs, rounds, stoppedEarly,
      reproduce: [...reproduce, ...serverErrors.slice(0, 5).map((i) => `${o.reproduce(i)} (answered 5xx)`)],
      details: {
        answers: Object.fromEntries([...statuses].sort((a, b) => b[1] - a[1])),
        'connections refused': refused,
        '5xx other than 501/503 (first cases)': serverErrors,
      },
      exit: exited ? { code: exitCode ?? '?' } : undefined,
      disturbed: async () => { const why = podDisturbed(podBefore, await o.pod()); return why && `${o.target.namespace}/${o.target.pod}: ${why}`; },
    });
  } finally {
    rss.stop();
  }
}
