import { isNotFound } from '../errors.ts';
import { LABEL, managedSelector } from './labels.ts';
import type { ContainerRuntime, ContainerStatus, ContainerSummary, SandboxStatus, SandboxSummary } from './types.ts';

/** Everything the runtime holds for one pod, newest first. */
export interface PodRuntimeStatus {
  uid: string;
  name: string;
  namespace: string;
  sandboxes: SandboxStatus[];
  containers: ContainerStatus[];
  /** When the listing this came from started (ms); older results never overwrite newer. */
  observedAt: number;
}

/**
 * The kubelet's view of the runtime, per pod. Listing is cheap (two RPCs for the node);
 * per-object status calls are made only for sandboxes and containers that are new or whose
 * state changed since the last look, because an object's status only changes with its state.
 */
export class RuntimeCache {
  private readonly pods = new Map<string, PodRuntimeStatus>();
  private readonly sandboxStatus = new Map<string, SandboxStatus>();
  private readonly containerStatus = new Map<string, ContainerStatus>();

  /** When the last node-wide relist finished (0 before the first succeeded). */
  lastRelistAt = 0;

  constructor(
    private readonly runtime: ContainerRuntime,
    private readonly opts: {
      /**
       * Completes the status of an exited container once (its status no longer changes): the
       * kubelet adds the termination message the container left. Must not throw.
       */
      decorateExited?: (status: ContainerStatus) => Promise<ContainerStatus>;
      /** The kubelet's runtimeInstance: the relist sees only its sandboxes and containers (see managedSelector). */
      runtimeInstance?: string;
    } = {},
  ) {}

  get(uid: string): PodRuntimeStatus | undefined {
    return this.pods.get(uid);
  }

  uids(): string[] {
    return [...this.pods.keys()];
  }

  all(): PodRuntimeStatus[] {
    return [...this.pods.values()];
  }

  /** Lists the whole node; returns the UIDs of pods whose sandboxes or containers changed. */
  async relist(): Promise<Set<string>> {
    const observedAt = Date.now();
    const selector = managedSelector(this.opts.runtimeInstance);
    const [sandboxes, containers] = await Promise.all([this.runtime.listPodSandboxes(selector), this.runtime.listContainers(selector)]);
    const grouped = groupByPod(sandboxes, containers);
    const changed = new Set<string>();
    await Promise.all(
      [...grouped].map(async ([uid, group]) => {
        if (await this.store(uid, group, observedAt)) changed.add(uid);
      }),
    );
    for (const uid of this.pods.keys()) {
      if (!grouped.has(uid) && this.pods.get(uid)!.observedAt <= observedAt) {
        this.forget(uid);
        changed.add(uid);
      }
    }
    // The node-wide listing is authoritative: statuses of objects it no longer holds go, even
    // those remembered for a pod that was never stored (at worst one is read again).
    const listed = new Set<string>([...sandboxes.map((s) => s.id), ...containers.map((c) => c.id)]);
    for (const id of this.sandboxStatus.keys()) if (!listed.has(id)) this.sandboxStatus.delete(id);
    for (const id of this.containerStatus.keys()) if (!listed.has(id)) this.containerStatus.delete(id);
    this.lastRelistAt = Date.now();
    return changed;
  }

  /** Re-reads one pod now (after the kubelet acted on it); returns its fresh status. */
  async refreshPod(uid: string): Promise<PodRuntimeStatus | undefined> {
    const observedAt = Date.now();
    const selector = { labelSelector: { [LABEL.podUID]: uid } };
    const [sandboxes, containers] = await Promise.all([this.runtime.listPodSandboxes(selector), this.runtime.listContainers(selector)]);
    const group = groupByPod(sandboxes, containers).get(uid);
    if (!group) {
      if ((this.pods.get(uid)?.observedAt ?? 0) <= observedAt) this.forget(uid);
      return undefined;
    }
    await this.store(uid, group, observedAt);
    return this.pods.get(uid);
  }

  /**
   * Keeps a sandbox status the kubelet just read itself (right after RunPodSandbox), so the
   * next read of the pod does not ask for it again while its state is unchanged.
   */
  rememberSandboxStatus(status: SandboxStatus): void {
    this.sandboxStatus.set(status.id, status);
  }

  private forget(uid: string): void {
    const old = this.pods.get(uid);
    for (const s of old?.sandboxes ?? []) this.sandboxStatus.delete(s.id);
    for (const c of old?.containers ?? []) this.containerStatus.delete(c.id);
    this.pods.delete(uid);
  }

  private async store(uid: string, group: PodGroup, observedAt: number): Promise<boolean> {
    const prevEntry = this.pods.get(uid);
    if (prevEntry && prevEntry.observedAt > observedAt) return false;
    // Nothing new, nothing gone, no state changed (most pods at most relists): the statuses are
    // the ones kept, so the entry is the same but for when it was seen.
    if (prevEntry && sameObjects(prevEntry, group)) {
      this.pods.set(uid, { ...prevEntry, observedAt });
      return false;
    }
    const [sandboxes, containers] = await Promise.all([
      Promise.all(group.sandboxes.map((s) => this.sandbox(s))),
      Promise.all(group.containers.map((c) => this.container(c))),
    ]);
    const next: PodRuntimeStatus = {
      uid,
      name: group.name,
      namespace: group.namespace,
      sandboxes: sandboxes.filter((s): s is SandboxStatus => !!s).sort((a, b) => b.createdAt - a.createdAt),
      containers: containers.filter((c): c is ContainerStatus => !!c).sort((a, b) => b.createdAt - a.createdAt),
      observedAt,
    };
    const prev = this.pods.get(uid);
    if (prev && prev.observedAt > observedAt) return false;
    // Drop statuses of objects that are gone so the maps do not grow without bound.
    for (const s of prev?.sandboxes ?? []) if (!next.sandboxes.some((n) => n.id === s.id)) this.sandboxStatus.delete(s.id);
    for (const c of prev?.containers ?? []) if (!next.containers.some((n) => n.id === c.id)) this.containerStatus.delete(c.id);
    this.pods.set(uid, next);
    return !prev || fingerprint(prev) !== fingerprint(next);
  }

  private async sandbox(summary: SandboxSummary): Promise<SandboxStatus | undefined> {
    const cached = this.sandboxStatus.get(summary.id);
    if (cached && cached.state === summary.state) return cached;
    try {
      const status = await this.runtime.podSandboxStatus(summary.id);
      this.sandboxStatus.set(summary.id, status);
      return status;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async container(summary: ContainerSummary): Promise<ContainerStatus | undefined> {
    const cached = this.containerStatus.get(summary.id);
    if (cached && cached.state === summary.state) return cached;
    try {
      // ContainerStatus does not carry the sandbox id; the listing does.
      let status: ContainerStatus = { ...(await this.runtime.containerStatus(summary.id)), podSandboxId: summary.podSandboxId };
      if (status.state === 'CONTAINER_EXITED' && this.opts.decorateExited) status = await this.opts.decorateExited(status);
      this.containerStatus.set(summary.id, status);
      return status;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

interface PodGroup { name: string; namespace: string; sandboxes: SandboxSummary[]; containers: ContainerSummary[] }

function groupByPod(sandboxes: SandboxSummary[], containers: ContainerSummary[]): Map<string, PodGroup> {
  const groups = new Map<string, PodGroup>();
  const group = (labels: Record<string, string>) => {
    const uid = labels[LABEL.podUID];
    if (!uid) return undefined;
    let g = groups.get(uid);
    if (!g) {
      g = { name: labels[LABEL.podName] ?? '', namespace: labels[LABEL.podNamespace] ?? '', sandboxes: [], containers: [] };
      groups.set(uid, g);
    }
    return g;
  };
  for (const s of sandboxes) group(s.labels)?.sandboxes.push(s);
  for (const c of containers) group(c.labels)?.containers.push(c);
  return groups;
}

/** The group lists exactly the sandboxes and containers `p` holds, each in the state `p` has it in. */
function sameObjects(p: PodRuntimeStatus, group: PodGroup): boolean {
  if (p.sandboxes.length !== group.sandboxes.length || p.containers.length !== group.containers.length) return false;
  for (const s of group.sandboxes) if (!p.sandboxes.some((x) => x.id === s.id && x.state === s.state)) return false;
  for (const c of group.containers) if (!p.containers.some((x) => x.id === c.id && x.state === c.state)) return false;
  return true;
}

/** What PLEG compares between two looks at a pod: its sandboxes' and containers' IDs and states. */
export function podFingerprint(p: PodRuntimeStatus): string {
  return fingerprint(p);
}

function fingerprint(p: PodRuntimeStatus): string {
  return [...p.sandboxes.map((s) => `${s.id}:${s.state}`), ...p.containers.map((c) => `${c.id}:${c.state}`)].sort().join(',');
}
