/**
 * The message an evicted pod shows, in upstream's words (pkg/kubelet/eviction/helpers.go
 * evictionMessage), so tools and people that read them keep working:
 *   "The node was low on resource: memory. Threshold quantity: 100Mi, available: 87004Ki. "
 *   + "Container hog was using 612Mi, request is 10Mi, has larger consumption of memory. "
 */
import type { V1Pod } from '@kubernetes/client-node';
import { binaryQuantity, type PressureEvent } from 'kubelet-ts';

export function evictionMessage(event: PressureEvent, pod: V1Pod): string {
  const bytes = event.resource === 'memory' || event.resource === 'ephemeral-storage';
  const q = (s: string) => (bytes ? binaryQuantity(Number(s)) : s);
  let message = `The node was low on resource: ${event.resource}. Threshold quantity: ${q(event.thresholdQuantity)}, available: ${q(event.observed)}. `;
  if (!bytes) return message;
  const usage = event.usage[pod.metadata?.uid ?? ''];
  for (const c of usage?.containers ?? []) {
    const used = event.resource === 'memory' ? c.memoryBytes : c.ephemeralStorageBytes;
    const requested = event.resource === 'memory' ? c.memoryRequestBytes : c.ephemeralStorageRequestBytes;
    if (used === undefined || used <= requested) continue;
    const spec = pod.spec?.containers.find((x) => x.name === c.name);
    const requestText = spec?.resources?.requests?.[event.resource] ?? spec?.resources?.limits?.[event.resource] ?? '0';
    message += `Container ${c.name} was using ${binaryQuantity(used)}, request is ${String(requestText)}, has larger consumption of ${event.resource}. `;
  }
  return message;
}
