import type { V1Container, V1Pod, V1Probe } from '@kubernetes/client-node';
import type { KubeletPlugin } from '../plugins/plugin-api.ts';
import type { ProbeType } from '../hooks.ts';
import { errorMessage } from '../errors.ts';
import { clampTimerMs } from '../util/timeouts.ts';

/** Seconds as the probe gives them (upstream's defaulting: negative or unset is 0). */
const delayMs = (p: V1Probe | undefined) => clampTimerMs(Math.max(0, p?.initialDelaySeconds ?? 0) * 1000);

/**
 * The prober of a hollow node. Its containers have no processes: an httpGet or tcpSocket probe
 * would dial a pod IP nothing listens on, and an exec probe would run in nothing, so the real
 * prober (the `probes` plugin) would fail every probe and restart every container with a
 * liveness probe. What a hollow node reports instead is what a healthy process would: a
 * startup probe succeeds `initialDelaySeconds` after the container started, a readiness probe
 * at its own `initialDelaySeconds` (and not before the startup probe), a liveness probe never
 * fails. The results go through `ctx.reportProbe` as the real prober's do, so the core sets
 * `started`, `ready` and the pod's Ready condition as on a real node. One timer per container
 * with probes, none per period.
 */
export function hollowProberPlugin(): KubeletPlugin {
  return {
    name: 'hollow-prober',
    kind: 'probe',
    apply(ctx) {
      /** Pending reports by container ID, with the pod they belong to. */
      const pending = new Map<string, { uid: string; timers: NodeJS.Timeout[] }>();
      const cancel = (containerId: string) => {
        for (const t of pending.get(containerId)?.timers ?? []) clearTimeout(t);
        pending.delete(containerId);
      };
      const report = (pod: V1Pod, container: V1Container, containerId: string, probe: ProbeType) => {
        ctx.reportProbe({ pod, containerName: container.name, containerId, probe, result: 'success', output: '' }).catch((err) => ctx.logger.warn({ err: errorMessage(err), container: container.name }, 'reporting a hollow probe result failed'));
      };
      ctx.hooks.afterStart.tap('hollow-prober', (e) => {
        const { startupProbe, readinessProbe } = e.container;
        if (!startupProbe && !readinessProbe) return;
        const timers: NodeJS.Timeout[] = [];
        const startedAfter = startupProbe ? delayMs(startupProbe) : 0;
        if (startupProbe) timers.push(setTimeout(() => report(e.pod, e.container, e.containerId, 'startup'), startedAfter));
        if (readinessProbe) timers.push(setTimeout(() => report(e.pod, e.container, e.containerId, 'readiness'), Math.max(startedAfter, delayMs(readinessProbe))));
        pending.set(e.containerId, { uid: e.pod.metadata?.uid ?? '', timers });
      });
      ctx.hooks.beforeKill.tap('hollow-prober', (e) => cancel(e.containerId));
      ctx.hooks.podRemoved.tap('hollow-prober', (pod) => {
        for (const [id, p] of pending) if (p.uid === pod.metadata?.uid) cancel(id);
      });
      const stopAll = () => {
        for (const id of [...pending.keys()]) cancel(id);
      };
      ctx.hooks.shutdown.tap('hollow-prober', stopAll);
      ctx.onClose(stopAll);
    },
  };
}
