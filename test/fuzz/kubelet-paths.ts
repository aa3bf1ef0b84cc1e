/**
 * What the kubelet computes from an accepted pod before it touches the runtime, run on a pod
 * with nothing of it in the runtime yet: the sandbox config, each container's config (init
 * containers too), the sync's actions, the status, the pod cgroup's limits and QoS class, the
 * volume types, and the probes plugin's reading of each probe. A pod that validation accepted
 * must go through all of it without a TypeError or RangeError: one is a gap in validation.
 *
 * A ContainerConfigError is the kubelet's own refusal of one container (upstream's
 * CreateContainerConfigError, e.g. an env var from a ConfigMap key) and is allowed.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { buildSandboxConfig } from '../../core/pod/sandbox-config.ts';
import { buildContainerConfig, ContainerConfigError } from '../../core/pod/container-config.ts';
import { computePodActions } from '../../core/pod/pod-actions.ts';
import { Backoff } from '../../core/pod/backoff.ts';
import { computePodStatus } from '../../core/status/pod-status.ts';
import { ProbeResults } from '../../core/status/probe-results.ts';
import { podCgroupName, podResources } from '../../core/cgroups/pod-cgroups.ts';
import { volumeType } from '../../core/volumes/volume-manager.ts';
import { declaredProbes, normalizeProbe } from '../../plugins/probes/probe-spec.ts';
import { canonicalJson } from '../../core/sources/manifest.ts';

/** Runs every step; throws what a step threw, prefixed with the step. */
export function runKubeletPaths(pod: V1Pod): void {
  const step = <T>(name: string, fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof ContainerConfigError) return undefined as T;
      const e = err instanceof Error ? err : new Error(String(err));
      e.message = `${name}: ${e.message}`;
      throw e;
    }
  };
  step('buildSandboxConfig', () => buildSandboxConfig(pod, 0, { podLogsDir: '/var/log/pods' }));
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    step(`buildContainerConfig(${c.name})`, () => buildContainerConfig(pod, c, 0, { podIP: '10.88.0.9', hostIP: '192.168.1.10' }));
    for (const [type, probe] of step(`declaredProbes(${c.name})`, () => declaredProbes(c))) {
      step(`normalizeProbe(${c.name}, ${type})`, () => normalizeProbe(probe, type, `spec.containers.${type}`));
    }
  }
  step('computePodActions', () => computePodActions(pod, undefined, new Backoff(10_000, 300_000)));
  step('computePodStatus', () =>
    computePodStatus(pod, undefined, {
      nodeIP: '192.168.1.10',
      runtimeName: 'containerd',
      waiting: new Map(),
      probes: new ProbeResults(),
      startTime: new Date(),
      previous: undefined,
      terminating: false,
    }),
  );
  step('podResources', () => podResources(pod));
  step('podCgroupName', () => podCgroupName([], pod));
  for (const v of pod.spec?.volumes ?? []) step(`volumeType(${v.name})`, () => volumeType(v));
  // What the source does with every pod: hash it, clone it, serve it as JSON.
  step('canonicalJson', () => canonicalJson(pod));
  step('structuredClone', () => structuredClone(pod));
  step('JSON.stringify', () => JSON.stringify(pod));
}
