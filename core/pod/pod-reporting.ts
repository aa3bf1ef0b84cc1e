import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { podRef, type EventRecorder, type EventType } from '../events/event-recorder.ts';
import { podFullName } from '../objects/pod-util.ts';

/** A logger whose lines name the pod (namespace/name and uid), as every part of a pod's sync logs. */
export function podLogger(logger: Logger, pod: V1Pod): Logger {
  return logger.child({ pod: podFullName(pod), uid: pod.metadata?.uid });
}

/** Records an event about the pod (or one of its containers), when the kubelet records events. */
export function recordPodEvent(events: EventRecorder | undefined, pod: V1Pod, container: string | undefined, type: EventType, reason: string, message: string): void {
  events?.record(podRef(pod, container), type, reason, message);
}
