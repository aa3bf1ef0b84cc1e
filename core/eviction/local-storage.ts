/**
 * Local ephemeral storage limits, enforced by eviction as upstream's localStorageEviction does
 * (pkg/kubelet/eviction/eviction_manager.go), in its order, first match per pod:
 *   1. an emptyDir whose use exceeds its `sizeLimit`;
 *   2. the pod's use (containers' writable layers and logs, and its local volumes) over the sum
 *      of its containers' `ephemeral-storage` limits (when any container sets one);
 *   3. a container whose writable layer and logs exceed its own `ephemeral-storage` limit.
 * These are limits the pod set itself, not node pressure: the core enforces them without asking
 * a policy, with upstream's messages.
 */
import { binaryQuantity } from '../objects/quantity.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { quantityValue } from '../objects/quantity.ts';
import type { PodStats } from '../stats/summary-types.ts';

export interface LocalStorageViolation { pod: V1Pod; message: string }

const limitOf = (q: unknown): number | undefined => {
  const v = quantityValue(q);
  return v !== undefined && Number.isFinite(v) && v > 0 ? v : undefined;
};

/** The original quantity text for messages (`"1Mi"`, as upstream prints a resource.Quantity). */
const text = (q: unknown) => String(q);

export function localStorageViolations(pods: V1Pod[], stats: PodStats[]): LocalStorageViolation[] {
  const byUid = new Map(stats.map((s) => [s.podRef.uid, s]));
  const out: LocalStorageViolation[] = [];
  for (const pod of pods) {
    const s = byUid.get(pod.metadata?.uid ?? '');
    if (!s) continue;
    const message = emptyDirViolation(pod, s) ?? podLimitViolation(pod, s) ?? containerLimitViolation(pod, s);
    if (message) out.push({ pod, message });
  }
  return out;
}

/**
 * Whether the pod set any limit enforced here (an emptyDir `sizeLimit`, a container's
 * `ephemeral-storage` limit): only such pods need their measured use each round.
 */
export function hasLocalStorageLimit(pod: V1Pod): boolean {
  if ((pod.spec?.volumes ?? []).some((v) => limitOf(v.emptyDir?.sizeLimit) !== undefined)) return true;
  return (pod.spec?.containers ?? []).some((c) => limitOf(c.resources?.limits?.['ephemeral-storage']) !== undefined);
}

function emptyDirViolation(pod: V1Pod, s: PodStats): string | undefined {
  for (const v of pod.spec?.volumes ?? []) {
    const limit = limitOf(v.emptyDir?.sizeLimit);
    if (limit === undefined) continue;
    const used = s.volume?.find((x) => x.name === v.name)?.usedBytes;
    if (used !== undefined && used > limit) return `Usage of EmptyDir volume "${v.name}" exceeds the limit "${text(v.emptyDir!.sizeLimit)}". `;
  }
  return undefined;
}

function podLimitViolation(pod: V1Pod, s: PodStats): string | undefined {
  let total = 0;
  for (const c of pod.spec?.containers ?? []) total += limitOf(c.resources?.limits?.['ephemeral-storage']) ?? 0;
  if (total === 0) return undefined;
  // Upstream counts the containers and the emptyDir volumes (not configMap, secret, ... which the kubelet writes).
  const emptyDirs = new Set((pod.spec?.volumes ?? []).filter((v) => v.emptyDir && v.emptyDir.medium !== 'Memory').map((v) => v.name));
  let used = 0;
  for (const c of s.containers) used += (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0);
  for (const v of s.volume ?? []) if (emptyDirs.has(v.name)) used += v.usedBytes ?? 0;
  return used > total ? `Pod ephemeral local storage usage exceeds the total limit of containers ${binaryQuantity(total)}. ` : undefined;
}

function containerLimitViolation(pod: V1Pod, s: PodStats): string | undefined {
  for (const c of pod.spec?.containers ?? []) {
    const limit = limitOf(c.resources?.limits?.['ephemeral-storage']);
    if (limit === undefined) continue;
    const cs = s.containers.find((x) => x.name === c.name);
    const used = (cs?.rootfs?.usedBytes ?? 0) + (cs?.logs?.usedBytes ?? 0);
    if (used > limit) return `Container ${c.name} exceeded its local ephemeral storage limit "${text(c.resources!.limits!['ephemeral-storage'])}". `;
  }
  return undefined;
}
