import type { ContainerStatus } from './types.ts';

/**
 * The labels and annotations the kubelet puts on sandboxes and containers. They are the
 * upstream kubelet's keys, so tools that read them (crictl, log collectors) keep working,
 * and they are how a restarted kubelet recognises and adopts what it made.
 */
export const LABEL = Object.freeze({
  podName: 'io.kubernetes.pod.name',
  podNamespace: 'io.kubernetes.pod.namespace',
  podUID: 'io.kubernetes.pod.uid',
  containerName: 'io.kubernetes.container.name',
  /**
   * Marks what this kubelet made, so it never touches other sandboxes in the runtime. Its value
   * is the kubelet's runtimeInstance ('true' when unset): see managedLabelValue.
   */
  managed: 'io.kubernetes-ts.managed',
});

/**
 * The value of the managed label on what a kubelet creates, and the only value it manages:
 * 'true' (what every kubelet-ts has written) unless the config names a runtimeInstance, so
 * kubelets sharing one runtime each see only their own sandboxes and containers.
 */
export function managedLabelValue(runtimeInstance: string | undefined): string {
  return runtimeInstance ?? 'true';
}

/** The CRI label selector of everything this kubelet manages. */
export function managedSelector(runtimeInstance: string | undefined): { labelSelector: Record<string, string> } {
  return { labelSelector: { [LABEL.managed]: managedLabelValue(runtimeInstance) } };
}

export const ANNOTATION = Object.freeze({
  containerHash: 'io.kubernetes.container.hash',
  containerRestartCount: 'io.kubernetes.container.restartCount',
  containerTerminationMessagePath: 'io.kubernetes.container.terminationMessagePath',
  containerTerminationMessagePolicy: 'io.kubernetes.container.terminationMessagePolicy',
  podTerminationGracePeriod: 'io.kubernetes.pod.terminationGracePeriod',
  containerPorts: 'io.kubernetes.container.ports',
});

/** A container's restart count: the kubelet's annotation on it, else the runtime's attempt number. */
export function restartCountOf(c: ContainerStatus | undefined): number {
  if (!c) return 0;
  const n = Number(c.annotations[ANNOTATION.containerRestartCount]);
  return Number.isFinite(n) ? n : c.metadata.attempt;
}
