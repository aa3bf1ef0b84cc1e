/**
 * The pod status lines of the up console: one line per pod, printed when the pod's line
 * changes. Pods are told apart by UID, not by namespace/name: while an edited static pod
 * replaces its predecessor both have one name, and keyed on the name their lines would
 * overwrite each other every poll and be printed again and again (~120 times over a grace
 * period). Sharing a name, each line carries its UID's first characters.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podStatusColumns } from '../../core/commands/pod-columns.ts';
import { PullProgressThrottle, pullMessagesOf } from '../../core/commands/pull-progress-throttle.ts';
import { withoutProgress } from '../../core/runtime/pull-progress-format.ts';

const UID_SHOWN = 8;

/**
 * `default/web-node  Running  ready 1/1  ip 10.88.0.5  restarts 0[  notes]`; `progress: false`
 * leaves a pull's figures out of its waiting message (what stays the same while it moves on).
 */
export function podLine(pod: V1Pod, opts: { showUid?: boolean; progress?: boolean } = {}): string {
  const key = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? '?'}`;
  const st = pod.status ?? {};
  const statuses = st.containerStatuses ?? [];
  const total = pod.spec?.containers?.length ?? statuses.length;
  const ready = statuses.filter((c) => c.ready).length;
  const restarts = [...(st.initContainerStatuses ?? []), ...statuses].reduce((n, c) => n + (c.restartCount ?? 0), 0);
  // STATUS as kubectl computes it (CrashLoopBackOff, Init:0/1, Terminating, ...).
  const status = podStatusColumns(pod).status;
  const who = opts.showUid ? `${key} (uid ${pod.metadata?.uid?.slice(0, UID_SHOWN) ?? '?'})` : key;
  const parts = [who, status, `ready ${ready}/${total}`, `ip ${st.podIP || '-'}`, `restarts ${restarts}`];
  const notes: string[] = [];
  for (const c of [...(st.initContainerStatuses ?? []), ...statuses]) {
    const w = c.state?.waiting;
    // The whole message, on one line: the console wraps it; the cause is at its end.
    const message = w?.message && opts.progress === false ? withoutProgress(w.message) : w?.message;
    if (w?.reason) notes.push(`${c.name}: ${w.reason}${message ? ` (${message.replace(/\s*\n\s*/g, ' ').trim()})` : ''}`);
    const t = c.state?.terminated;
    if (t && !c.state?.running && !w && st.phase !== 'Succeeded') notes.push(`${c.name}: ${t.reason ?? 'Terminated'} exit ${t.exitCode ?? '?'}`);
  }
  if (pod.status?.message && pod.status.reason) notes.push(pod.status.message);
  if (notes.length) parts.push(notes.join(', '));
  return parts.join('  ');
}

/**
 * What changed since the last poll, as console lines. A pull's progress changes the waiting
 * message every second: the line is printed again for it only when the pull has moved on
 * (PullProgressThrottle), other changes at once.
 */
export class PodLineTracker {
  /** Last line printed, by UID (without a pull's figures). */
  private readonly last = new Map<string, { line: string; name: string }>();
  private readonly pulls = new PullProgressThrottle();

  constructor(private readonly now: () => number = Date.now) {}
  /** Every UID seen, for the cleanup at stop (their pod cgroups). */
  readonly seenUids = new Set<string>();

  /** The lines to print for this poll's pods: changed pods, then pods that went away. */
  update(pods: V1Pod[]): string[] {
    const out: string[] = [];
    const present = new Set<string>();
    const pulling = new Set<string>();
    const names = new Map<string, number>();
    const nameOf = (p: V1Pod) => `${p.metadata?.namespace ?? 'default'}/${p.metadata?.name ?? '?'}`;
    for (const p of pods) names.set(nameOf(p), (names.get(nameOf(p)) ?? 0) + 1);
    for (const pod of pods) {
      const uid = pod.metadata?.uid ?? nameOf(pod);
      present.add(uid);
      if (pod.metadata?.uid) this.seenUids.add(pod.metadata.uid);
      const name = nameOf(pod);
      const line = podLine(pod, { showUid: (names.get(name) ?? 0) > 1 });
      // Compared without the UID part (a name starting or stopping to be shared is no change)
      // and without a pull's figures (they are shown when the pull has moved on enough).
      const plain = podLine(pod, { progress: false });
      const messages = pullMessagesOf(pod);
      for (const m of messages) pulling.add(`${uid}/${m.key}`);
      const changed = this.last.get(uid)?.line !== plain;
      // Every pulling container is asked, so a change shown for another reason counts as shown.
      const moved = messages.map((m) => this.pulls.shouldShow(`${uid}/${m.key}`, m.message, this.now())).some(Boolean);
      if (!changed && !moved) continue;
      this.last.set(uid, { line: plain, name });
      out.push(line);
    }
    this.pulls.retain(pulling);
    for (const [uid, { name }] of [...this.last]) {
      if (present.has(uid)) continue;
      this.last.delete(uid);
      const shared = [...this.last.values()].some((e) => e.name === name);
      out.push(`${name}${shared ? ` (uid ${uid.slice(0, UID_SHOWN)})` : ''}  removed`);
    }
    return out;
  }
}
