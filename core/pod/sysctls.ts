/**
 * Pod sysctls as upstream's kubelet admits them (pkg/kubelet/sysctl): the safe ones always,
 * the node's `allowedUnsafeSysctls` on top; anything else rejects the pod at admission with
 * reason SysctlForbidden. A sysctl of a namespace the pod shares with the host (net.* with
 * hostNetwork, IPC ones with hostIPC) is refused too: it would change the node.
 */
import type { V1Pod } from '@kubernetes/client-node';

/** The reason a pod is rejected with (upstream ForbiddenReason). */
export const SYSCTL_FORBIDDEN = 'SysctlForbidden';

/**
 * Upstream's safe sysctls (namespaced, and isolated from other pods). The two keyed to a kernel
 * version exist since 3.16 and 4.5; older kernels are not a target of this kubelet.
 */
export const SAFE_SYSCTLS: readonly string[] = Object.freeze([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
]);

export type SysctlNamespace = 'ipc' | 'net';

const EXACT: Record<string, SysctlNamespace> = { 'kernel.sem': 'ipc' };
const PREFIXES: Array<[string, SysctlNamespace]> = [['kernel.shm', 'ipc'], ['kernel.msg', 'ipc'], ['fs.mqueue.', 'ipc'], ['net.', 'net']];

/**
 * Upstream NormalizeName: a name written with `/` separators (`net/ipv4/conf/eth0.100/forwarding`)
 * becomes the dotted form (`net.ipv4.conf.eth0/100.forwarding`); a dotted name is unchanged.
 */
export function normalizeSysctlName(name: string): string {
  const first = name.search(/[./]/);
  if (first === -1 || name[first] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
}

/** The kernel namespace a sysctl (or a prefix of sysctls) belongs to; undefined when it is not namespaced. */
export function sysctlNamespace(name: string): SysctlNamespace | undefined {
  if (EXACT[name]) return EXACT[name];
  for (const [prefix, ns] of PREFIXES) if (name.startsWith(prefix)) return ns;
  return undefined;
}

/** A sysctl name, or a prefix ending in `*` (`net.*`, `kernel.msg*`). */
const PATTERN = /^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*([a-z0-9][-_a-z0-9]*)?\*?$/;

/**
 * The sysctls this node lets pods set: exact names and `prefix*` patterns, each with its
 * namespace. Built from the safe list and `allowedUnsafeSysctls`; a pattern that is not
 * namespaced cannot be allowed (it would change the node for every pod), so it fails the
 * kubelet's start, as upstream's NewAllowlist does.
 */
export class SysctlAllowlist {
  private readonly exact = new Map<string, SysctlNamespace>();
  private readonly prefixes = new Map<string, SysctlNamespace>();

  constructor(allowedUnsafe: readonly string[] = []) {
    for (const raw of [...SAFE_SYSCTLS, ...allowedUnsafe]) {
      if (raw.length > 253 || !PATTERN.test(raw)) throw new Error(`allowedUnsafeSysctls: sysctl "${raw}" must have at most 253 characters and be a sysctl name or a prefix ending in *`);
      let name = normalizeSysctlName(raw);
      const star = name.indexOf('*');
      const prefixed = star !== -1;
      if (prefixed) name = name.slice(0, star);
      const ns = sysctlNamespace(name);
      if (!ns) throw new Error(`allowedUnsafeSysctls: the sysctls "${name}" are not known to be namespaced (allowed: kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*, net.*)`);
      (prefixed ? this.prefixes : this.exact).set(name, ns);
    }
  }

  /** Why this sysctl may not be set by this pod, or undefined if it may. */
  check(name: string, hostNetwork: boolean, hostIPC: boolean): string | undefined {
    const n = normalizeSysctlName(name);
    let ns = this.exact.get(n);
    if (!ns) for (const [p, pns] of this.prefixes) if (n.startsWith(p)) ns = pns;
    if (!ns) return `"${n}" not allowlisted`;
    if (ns === 'ipc' && hostIPC) return `"${n}" not allowed with host ipc enabled`;
    if (ns === 'net' && hostNetwork) return `"${n}" not allowed with host net enabled`;
    return undefined;
  }

  /** Upstream's admission: the first sysctl of the pod that is not allowed rejects it. */
  admit(pod: V1Pod): { reason: string; message: string } | undefined {
    for (const s of pod.spec?.securityContext?.sysctls ?? []) {
      const why = this.check(s.name, pod.spec?.hostNetwork === true, pod.spec?.hostIPC === true);
      if (why) return { reason: SYSCTL_FORBIDDEN, message: `forbidden sysctl: ${why}` };
    }
    return undefined;
  }
}

/** The sandbox's sysctls, names in the dotted form the runtime expects. */
export function podSysctls(pod: V1Pod): Record<string, string> {
  const out: Record<string, string> = {};
  // An absent value is "" as upstream reads it (never undefined to the runtime).
  for (const s of pod.spec?.securityContext?.sysctls ?? []) out[normalizeSysctlName(s.name)] = s.value ?? '';
  return out;
}
