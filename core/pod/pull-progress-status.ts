/**
 * Pull progress in the pod's status as this kubelet serves it (`/pods`: `kubelet-ts pods`,
 * the up console, `curl`): a container whose image is pulling waits with its reason
 * unchanged (`ContainerCreating`, so STATUS reads as kubectl computes it) and the progress as
 * its message, as `kubectl describe` would show a waiting message.
 *
 * Only in what is served, never in the status the status manager keeps and posts to an API
 * server: upstream's kubelet posts no progress, and a message changing every second would be
 * a status PATCH per second per pulling pod.
 */
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { PullSnapshot } from '../runtime/pull-progress.ts';
import { pullingMessage } from '../runtime/pull-progress-format.ts';
import { defaultWaitingReason } from '../objects/pod-util.ts';

/** A container of a pod whose image is being pulled now. */
export interface ActivePull {
  container: string;
  init: boolean;
  image: string;
  /** Undefined while nothing was seen downloading (or the runtime cannot tell). */
  progress: PullSnapshot | undefined;
}

/** The pod with its pulling containers' messages set; the pod given is not changed. */
export function withPullProgress(pod: V1Pod, pulls: ActivePull[]): V1Pod {
  if (pulls.length === 0) return pod;
  const status = { ...(pod.status ?? {}) };
  // Before its first sync ends a pod has no container statuses yet: they are made as the
  // status manager makes them for containers not created (waiting, the default reason).
  const defaultReason = defaultWaitingReason(pod);
  const fresh = (name: string, image: string): V1ContainerStatus => ({ name, image, imageID: '', ready: false, restartCount: 0, started: false, state: { waiting: { reason: defaultReason } } });
  status.phase ??= 'Pending';
  for (const init of [true, false]) {
    const key = init ? 'initContainerStatuses' : 'containerStatuses';
    const mine = pulls.filter((p) => p.init === init);
    if (mine.length === 0) continue;
    const specs = (init ? pod.spec?.initContainers : pod.spec?.containers) ?? [];
    const list = (status[key] ?? specs.map((c) => fresh(c.name, c.image ?? ''))).map((c) => ({ ...c }));
    for (const p of mine) {
      let c = list.find((s) => s.name === p.container);
      if (!c) list.push((c = fresh(p.container, p.image)));
      // A running or finished container (a restart pulling again) keeps its state as it is.
      if (!c.state?.waiting) continue;
      c.state = { ...c.state, waiting: { ...c.state.waiting, message: pullingMessage(p.image, p.progress) } };
    }
    status[key] = list;
  }
  return { ...pod, status };
}
