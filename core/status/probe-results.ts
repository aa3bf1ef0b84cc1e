import type { ProbeOutcome, ProbeType } from '../hooks.ts';

/**
 * The latest probe result of each running container, by container ID, as the probes
 * plugin reports them through `onProbe`. Status reads readiness and startup from it; the
 * sync reads liveness and startup failures to kill and restart containers.
 */
export class ProbeResults {
  private readonly results = new Map<string, Partial<Record<ProbeType, ProbeOutcome>>>();

  set(containerId: string, probe: ProbeType, result: ProbeOutcome): void {
    const r = this.results.get(containerId) ?? {};
    r[probe] = result;
    this.results.set(containerId, r);
  }

  get(containerId: string, probe: ProbeType): ProbeOutcome | undefined {
    return this.results.get(containerId)?.[probe];
  }

  /** Containers among `ids` whose liveness or startup probe failed. */
  unhealthy(ids: Iterable<string>): Map<string, 'liveness' | 'startup'> {
    const out = new Map<string, 'liveness' | 'startup'>();
    for (const id of ids) {
      const r = this.results.get(id);
      if (r?.liveness === 'failure') out.set(id, 'liveness');
      else if (r?.startup === 'failure') out.set(id, 'startup');
    }
    return out;
  }

  /** Containers with a result (tests: every entry goes with its container). */
  get size(): number {
    return this.results.size;
  }

  /** Forgets a container that is gone. */
  forget(containerId: string): void {
    this.results.delete(containerId);
  }
}
