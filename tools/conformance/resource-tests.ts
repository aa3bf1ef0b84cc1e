/**
 * The conformance tests that touch cgroups and resources (a container's or the node's CPU and
 * memory, a QoS class, a pod's overhead), as the node VM suite runs them
 * (test/vm/conformance-resources.test.ts): every one passes with upstream's kubelet on the
 * host's harness (../shared/conformance/reference-upstream.txt).
 */
/** Each names a container's or the node's CPU and memory, a QoS class or a pod's overhead. */
export const RESOURCE_TESTS = [
  "[sig-node] Downward API should provide container's limits.cpu/memory and requests.cpu/memory as env vars [NodeConformance] [Conformance]",
  '[sig-node] Downward API should provide default limits.cpu/memory from node allocatable [NodeConformance] [Conformance]',
  '[sig-node] Pods Extended Pods Set QOS Class should be set on Pods with matching resource requests and limits for memory and cpu [Conformance]',
  '[sig-node] RuntimeClass should reject a Pod requesting a deleted RuntimeClass [NodeConformance] [Conformance]',
  '[sig-node] RuntimeClass should reject a Pod requesting a non-existent RuntimeClass [NodeConformance] [Conformance]',
  '[sig-node] RuntimeClass should schedule a Pod requesting a RuntimeClass and initialize its Overhead [NodeConformance] [Conformance]',
  '[sig-node] RuntimeClass should schedule a Pod requesting a RuntimeClass without PodOverhead [NodeConformance] [Conformance]',
  ...['Downward API volume', 'Projected downwardAPI'].flatMap((kind) => [
    `[sig-storage] ${kind} should provide container's cpu limit [NodeConformance] [Conformance]`,
    `[sig-storage] ${kind} should provide container's cpu request [NodeConformance] [Conformance]`,
    `[sig-storage] ${kind} should provide container's memory limit [NodeConformance] [Conformance]`,
    `[sig-storage] ${kind} should provide container's memory request [NodeConformance] [Conformance]`,
    `[sig-storage] ${kind} should provide node allocatable (cpu) as default cpu limit if the limit is not set [NodeConformance] [Conformance]`,
    `[sig-storage] ${kind} should provide node allocatable (memory) as default memory limit if the limit is not set [NodeConformance] [Conformance]`,
  ]),
];

/** A ginkgo focus matching these names (spaces as runs of blanks: ginkgo joins container texts with one); not anchored, since ginkgo may match more than the name (its labels). */
export function focusOf(names: string[]): string {
  return names.map((n) => n.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&').replace(/ +/g, '\\s+')).join('|');
}

