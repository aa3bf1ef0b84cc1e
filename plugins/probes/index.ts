import { definePlugin, errorMessage } from 'kubelet-ts';
import { ProbeManager } from './manager.ts';
import { optionsSchema, type ProbesOptions } from './options-schema.ts';


/**
 * probes: runs the containers' liveness, readiness and startup probes (exec through CRI
 * ExecSync, httpGet, tcpSocket, grpc) with upstream's timing and thresholds, and reports each
 * result transition with `ctx.reportProbe` (the `onProbe` hook), where the core sets readiness
 * and restarts containers that fail liveness or startup.
 */
export default definePlugin<ProbesOptions>({
  name: 'probes',
  kind: 'probe',
  optionsSchema,
  apply(ctx, options) {
    const manager = new ProbeManager(
      { runtime: () => ctx.runtime(), pods: () => ctx.pods(), reportProbe: (e) => ctx.reportProbe(e), observeProbeRun: (r) => ctx.observeProbeRun(r), recordEvent: (e) => ctx.recordEvent(e), logger: ctx.logger },
      options,
    );
    // Workers of a new container start with it, once its postStart handler is done (upstream's container is not Running before).
    ctx.hooks.afterStart.tapPromise('probes', async (e) => manager.containerStarted(e.pod, e.container, e.containerId, e.podIP, Date.now()));
    // Reconcile with what users see: exited containers lose their workers, running ones without workers (adopted) get them.
    ctx.hooks.podStatusChanged.tap('probes', (pod, status) => {
      // A sync observer: a bug here must not fail the status update that fired it.
      try {
        manager.reconcile(pod, status);
      } catch (err) {
        ctx.logger.error({ err: errorMessage(err), pod: `${pod.metadata?.namespace}/${pod.metadata?.name}` }, 'probe reconcile failed');
      }
    });
    // A container about to be stopped is probed no more (no liveness kill during its preStop or grace period).
    ctx.hooks.beforeKill.tapPromise('probes', async (e) => manager.containerStopping(e.pod, e.containerId));
    ctx.hooks.podRemoved.tapPromise('probes', async (pod) => manager.podRemoved(pod));
    ctx.hooks.shutdown.tapPromise('probes', async () => manager.stopAll());
    ctx.onClose(() => manager.stopAll());
  },
});
