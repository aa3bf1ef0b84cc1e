/**
 * When a view that prints a line per change (`kubelet-ts pods -w`, the up console) shows a
 * pull's progress again: the waiting message changes every second while an image pulls, and a
 * line a second would drown everything else. A pull is shown when it starts, then when it has
 * moved on by `STEP_PERCENT` and `MIN_INTERVAL_MS` have passed since it was last shown (a
 * 300 MB pull: about ten lines), or, without a known total, every `NO_TOTAL_INTERVAL_MS`.
 */
import { pullProgressOfMessage } from '../runtime/pull-progress-format.ts';

const STEP_PERCENT = 10;
const MIN_INTERVAL_MS = 2000;
const NO_TOTAL_INTERVAL_MS = 10_000;

export class PullProgressThrottle {
  private readonly shown = new Map<string, { percent: number | undefined; at: number; message: string }>();

  /** Whether to show this pull progress message of `key` (a pod, a container) now; records it when so. */
  shouldShow(key: string, message: string, nowMs = Date.now()): boolean {
    const p = pullProgressOfMessage(message);
    if (!p) return false;
    const last = this.shown.get(key);
    let show: boolean;
    if (!last) show = true;
    else if (message === last.message) show = false;
    else if (p.percent !== undefined && last.percent !== undefined) show = Math.abs(p.percent - last.percent) >= STEP_PERCENT && nowMs - last.at >= MIN_INTERVAL_MS;
    // A total that became known (or was lost) is news; without one, time alone tells.
    else if (p.percent !== undefined || last.percent !== undefined) show = nowMs - last.at >= MIN_INTERVAL_MS;
    else show = nowMs - last.at >= NO_TOTAL_INTERVAL_MS;
    if (show) this.shown.set(key, { percent: p.percent, at: nowMs, message });
    return show;
  }

  /** Forgets `key` (its pull ended, or the pod went): the next pull is shown from its start. */
  forget(key: string): void {
    this.shown.delete(key);
  }

  /** Forgets every key not in `keep`. */
  retain(keep: Set<string>): void {
    for (const k of this.shown.keys()) if (!keep.has(k)) this.shown.delete(k);
  }
}

/** The pull progress messages of a pod's waiting containers, by container (`init/name` or `app/name`). */
export function pullMessagesOf(pod: { status?: { initContainerStatuses?: Array<{ name: string; state?: { waiting?: { message?: string } } }>; containerStatuses?: Array<{ name: string; state?: { waiting?: { message?: string } } }> } }): Array<{ container: string; key: string; message: string }> {
  const out: Array<{ container: string; key: string; message: string }> = [];
  for (const [kind, list] of [['init', pod.status?.initContainerStatuses], ['app', pod.status?.containerStatuses]] as const) {
    for (const c of list ?? []) {
      const message = c.state?.waiting?.message;
      if (message && pullProgressOfMessage(message)) out.push({ container: c.name, key: `${kind}/${c.name}`, message });
    }
  }
  return out;
}
