/**
 * Pod and container security contexts → CRI, as upstream's kubelet maps them
 * (pkg/kubelet/kuberuntime/security_context.go, security_context_others.go, helpers.go,
 * kuberuntime_sandbox_linux.go; pkg/securitycontext/util.go). Pure functions: what needs the
 * host (does a Localhost seccomp profile exist, is AppArmor enabled) is asked by the callers.
 *
 * A field the runtime would silently drop is refused here with a clear message instead
 * (unknown capability names, procMount Unmasked): the pod spec is hostile input, and a
 * container that runs with less isolation than its spec says is worse than one that does not run.
 */
import type { V1Capabilities, V1Container, V1Pod, V1SecurityContext } from '@kubernetes/client-node';
import path from 'node:path';
import type { LinuxContainerSecurityContext, LinuxSandboxSecurityContext, SELinuxOption, SecurityProfile } from '../runtime/types.ts';
import { allContainersOf, containersOf, podDesc } from '../objects/pod-util.ts';

/** A security context that cannot be honoured: the container waits with CreateContainerConfigError and this message. */
export class SecurityContextError extends Error {}

/** The image's user as CRI ImageStatus reports it: a numeric uid, or a name; neither means root (upstream getImageUser). */
export interface ImageUser { uid?: number; username?: string }

/** What the container mapping needs besides the pod: the image's user and where Localhost seccomp profiles live. */
export interface SecurityInputs {
  image: ImageUser;
  /** `<rootDir>/seccomp`: Localhost profiles are relative to it (upstream --seccomp-profile-root). */
  seccompProfileRoot: string;
  /** Containers without a seccomp profile get RuntimeDefault instead of Unconfined (upstream seccompDefault). */
  seccompDefault?: boolean;
}

/** Upstream's DefaultMaskedPaths (pkg/securitycontext/util.go, 1.28): what procMount Default hides. */
export const DEFAULT_MASKED_PATHS: readonly string[] = Object.freeze([
  '/proc/asound', '/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list',
  '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware',
]);

/** Upstream's DefaultReadonlyPaths: what procMount Default makes read-only. */
export const DEFAULT_READONLY_PATHS: readonly string[] = Object.freeze(['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger']);

/**
 * The Linux capabilities (capability.h, 0..40), without the `CAP_` prefix as CRI carries them:
 * containerd 1.6 upper-cases each name and prepends `CAP_`, and runc 1.1 ignores a name it does
 * not know (so `CAP_NET_ADMIN` would become `CAP_CAP_NET_ADMIN` and be dropped without a word).
 */
const CAPABILITIES = new Set([
  'CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP',
  'LINUX_IMMUTABLE', 'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER',
  'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT', 'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE',
  'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE', 'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP',
  'MAC_OVERRIDE', 'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ', 'PERFMON', 'BPF',
  'CHECKPOINT_RESTORE',
]);

/** The AppArmor annotation of 1.28's API (the field came in 1.30): `<prefix><container name>`. */
export const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/**
 * The container's effective security context: the pod's runAsUser, runAsGroup, runAsNonRoot,
 * seLinuxOptions (and the profile fields) unless the container sets its own (upstream
 * DetermineEffectiveSecurityContext).
 */
export function effectiveSecurityContext(pod: V1Pod, container: V1Container): V1SecurityContext {
  const psc = pod.spec?.securityContext ?? {};
  const inherited: V1SecurityContext = {};
  for (const key of ['runAsUser', 'runAsGroup', 'runAsNonRoot', 'seLinuxOptions', 'windowsOptions', 'seccompProfile', 'appArmorProfile'] as const) {
    if (psc[key] !== undefined && psc[key] !== null) (inherited as Record<string, unknown>)[key] = psc[key];
  }
  const own = Object.fromEntries(Object.entries(container.securityContext ?? {}).filter(([, v]) => v !== undefined && v !== null));
  return { ...inherited, ...own };
}

/**
 * Upstream verifyRunAsNonRoot: with runAsNonRoot, a container that would run as uid 0 (its
 * runAsUser, else the image's user; no user in the image is root) is refused, and so is an
 * image whose user is a name the kubelet cannot check. Returns the refusal, or undefined.
 */
export function verifyRunAsNonRoot(pod: V1Pod, container: V1Container, image: ImageUser): string | undefined {
  const sc = effectiveSecurityContext(pod, container);
  if (sc.runAsNonRoot !== true) return undefined;
  if (sc.runAsUser !== undefined) {
    return sc.runAsUser === 0 ? `container's runAsUser breaks non-root policy (pod: "${podDesc(pod)}", container: ${container.name})` : undefined;
  }
  if (image.uid === undefined && image.username) {
    return `container has runAsNonRoot and image has non-numeric user (${image.username}), cannot verify user is non-root (pod: "${podDesc(pod)}", container: ${container.name})`;
  }
  if ((image.uid ?? 0) === 0) return `container has runAsNonRoot and image will run as root (pod: "${podDesc(pod)}", container: ${container.name})`;
  return undefined;
}

/** Whether the container's user must be read from the image (nothing in the spec names it). */
export function needsImageUser(pod: V1Pod, container: V1Container): boolean {
  return effectiveSecurityContext(pod, container).runAsUser === undefined;
}

/**
 * Capability names as CRI carries them: upper case, without `CAP_` (a `CAP_` prefix is
 * accepted and removed, since CRI-O takes both spellings and users write both); `ALL` stays.
 * An unknown name is refused rather than left for the runtime to ignore.
 */
export function criCapabilities(names: string[] | undefined, field: 'add' | 'drop'): string[] {
  const out: string[] = [];
  for (const raw of names ?? []) {
    const upper = String(raw).toUpperCase();
    const name = upper.startsWith('CAP_') ? upper.slice(4) : upper;
    if (name !== 'ALL' && !CAPABILITIES.has(name)) {
      throw new SecurityContextError(`securityContext.capabilities.${field}: unknown capability "${raw}" (allowed: ALL or a Linux capability such as NET_ADMIN)`);
    }
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

function hasCapability(caps: V1Capabilities | undefined, name: string): boolean {
  return (caps?.add ?? []).some((c) => {
    const u = String(c).toUpperCase();
    return u === name || u === `CAP_${name}` || u === 'ALL';
  });
}

/** Upstream HasPrivilegedContainer: any init, app (or ephemeral) container asks for privileged. */
export function hasPrivilegedContainer(pod: V1Pod): boolean {
  return allContainersOf(pod).some((c) => c.securityContext?.privileged === true);
}

function selinux(o: V1SecurityContext['seLinuxOptions']): SELinuxOption | undefined {
  return o ? { user: o.user ?? '', role: o.role ?? '', type: o.type ?? '', level: o.level ?? '' } : undefined;
}

/**
 * A localhostProfile is a path relative to the profile root: absolute paths and `..` elements
 * are refused (API validation refuses them too; a static pod has no API server in front).
 */
function localProfilePath(root: string, profile: string | undefined, what: string): string {
  if (!profile) throw new SecurityContextError(`${what}: localhostProfile must be set if seccompProfile type is Localhost`);
  if (path.isAbsolute(profile) || profile.split('/').includes('..')) {
    throw new SecurityContextError(`${what}: localhostProfile "${profile}" must be a relative path without '..' (it is relative to ${root})`);
  }
  return path.join(root, profile);
}

/**
 * The container's seccomp profile (upstream getSeccompProfile): the container's, else the pod's;
 * none → Unconfined (RuntimeDefault with seccompDefault). Localhost is `<root>/<localhostProfile>`.
 */
export function seccompProfile(pod: V1Pod, container: V1Container | undefined, inputs: Pick<SecurityInputs, 'seccompProfileRoot' | 'seccompDefault'>): SecurityProfile {
  const p = container?.securityContext?.seccompProfile ?? pod.spec?.securityContext?.seccompProfile;
  const where = container?.securityContext?.seccompProfile ? `container ${container.name} securityContext.seccompProfile` : 'pod securityContext.seccompProfile';
  if (!p) return { profileType: inputs.seccompDefault ? 'RuntimeDefault' : 'Unconfined' };
  switch (p.type) {
    case 'RuntimeDefault': return { profileType: 'RuntimeDefault' };
    case 'Unconfined': return { profileType: 'Unconfined' };
    case 'Localhost': return { profileType: 'Localhost', localhostRef: localProfilePath(inputs.seccompProfileRoot, p.localhostProfile, where) };
    default: throw new SecurityContextError(`${where}: unknown type "${p.type}" (allowed: RuntimeDefault, Unconfined, Localhost)`);
  }
}

/** The deprecated string form of a seccomp profile (CRI seccomp_profile_path), for runtimes that read only it. */
export function seccompProfilePath(p: SecurityProfile): string {
  return p.profileType === 'RuntimeDefault' ? 'runtime/default' : p.profileType === 'Localhost' ? `localhost/${p.localhostRef}` : 'unconfined';
}

/**
 * The container's AppArmor profile: the securityContext field (1.30+: container, then pod),
 * else 1.28's annotation `container.apparmor.security.beta.kubernetes.io/<name>`
 * (`runtime/default`, `unconfined`, `localhost/<profile>`). Undefined when none is asked for.
 */
export function appArmorProfile(pod: V1Pod, container: V1Container): { profile: SecurityProfile; legacy: string } | undefined {
  type Field = { type?: string; localhostProfile?: string };
  const field = ((container.securityContext as { appArmorProfile?: Field } | undefined)?.appArmorProfile
    ?? (pod.spec?.securityContext as { appArmorProfile?: Field } | undefined)?.appArmorProfile);
  if (field) {
    switch (field.type) {
      case 'RuntimeDefault': return { profile: { profileType: 'RuntimeDefault' }, legacy: 'runtime/default' };
      case 'Unconfined': return { profile: { profileType: 'Unconfined' }, legacy: 'unconfined' };
      case 'Localhost':
        if (!field.localhostProfile) throw new SecurityContextError('appArmorProfile: localhostProfile must be set if type is Localhost');
        return { profile: { profileType: 'Localhost', localhostRef: field.localhostProfile }, legacy: `localhost/${field.localhostProfile}` };
      default: throw new SecurityContextError(`appArmorProfile: unknown type "${field.type}" (allowed: RuntimeDefault, Unconfined, Localhost)`);
    }
  }
  const value = pod.metadata?.annotations?.[`${APPARMOR_ANNOTATION_PREFIX}${container.name}`];
  if (value === undefined || value === '') return undefined;
  if (value === 'runtime/default') return { profile: { profileType: 'RuntimeDefault' }, legacy: value };
  if (value === 'unconfined') return { profile: { profileType: 'Unconfined' }, legacy: value };
  if (value.startsWith('localhost/') && value.length > 'localhost/'.length) return { profile: { profileType: 'Localhost', localhostRef: value.slice('localhost/'.length) }, legacy: value };
  throw new SecurityContextError(`invalid AppArmor profile name: "${value}" (allowed: runtime/default, unconfined, localhost/<profile>)`);
}

/** Whether any container of the pod asks for an AppArmor profile other than unconfined (upstream apparmor isRequired). */
export function requiresAppArmor(pod: V1Pod): boolean {
  for (const c of containersOf(pod)) {
    try {
      const p = appArmorProfile(pod, c);
      if (p && p.profile.profileType !== 'Unconfined') return true;
    } catch {
      return true; // an invalid profile is enforced too: the container will say why
    }
  }
  return false;
}

/**
 * procMount → the paths the runtime masks and makes read-only (upstream
 * ConvertToRuntimeMaskedPaths / ReadonlyPaths). Unmasked is refused: CRI carries it as empty
 * lists, which proto3 cannot tell from unset, so containerd masks /proc anyway (observed with
 * containerd 1.6.20) — and 1.28 has the field only behind the disabled ProcMountType gate.
 * A privileged container is the exception: the runtime unmasks its /proc whatever it is sent.
 */
export function procMountPaths(sc: V1SecurityContext, container: V1Container): { maskedPaths: string[]; readonlyPaths: string[] } {
  const mode = sc.procMount ?? 'Default';
  if (mode === 'Default') return { maskedPaths: [...DEFAULT_MASKED_PATHS], readonlyPaths: [...DEFAULT_READONLY_PATHS] };
  if (mode === 'Unmasked') {
    if (sc.privileged === true) return { maskedPaths: [], readonlyPaths: [] };
    throw new SecurityContextError(`container ${container.name}: procMount Unmasked cannot be honoured: CRI v1 carries it as an empty masked-path list, which the runtime reads as unset and masks /proc anyway`);
  }
  throw new SecurityContextError(`container ${container.name}: unknown procMount "${mode}" (allowed: Default, Unmasked)`);
}

/**
 * The CRI security context of one container (upstream determineEffectiveSecurityContext):
 * user and group (the image's user when the spec names none), supplemental groups (fsGroup
 * first, then supplementalGroups), capabilities, privileged, read-only root, no_new_privs,
 * seccomp, AppArmor, SELinux, masked and read-only /proc paths. Namespaces are the caller's.
 * Throws SecurityContextError for what cannot be honoured.
 */
export function containerSecurityContext(pod: V1Pod, container: V1Container, inputs: SecurityInputs): Omit<LinuxContainerSecurityContext, 'namespaceOptions'> {
  const refusal = verifyRunAsNonRoot(pod, container, inputs.image);
  if (refusal) throw new SecurityContextError(refusal);
  const sc = effectiveSecurityContext(pod, container);
  const psc = pod.spec?.securityContext;
  const privileged = sc.privileged === true;
  const out: Omit<LinuxContainerSecurityContext, 'namespaceOptions'> = { privileged, readonlyRootfs: sc.readOnlyRootFilesystem === true };
  if (sc.capabilities) {
    out.capabilities = { addCapabilities: criCapabilities(sc.capabilities.add, 'add'), dropCapabilities: criCapabilities(sc.capabilities.drop, 'drop') };
  }
  if (sc.runAsUser !== undefined) out.runAsUser = { value: sc.runAsUser };
  else if (inputs.image.uid !== undefined) out.runAsUser = { value: inputs.image.uid };
  else if (inputs.image.username) out.runAsUsername = inputs.image.username;
  else out.runAsUser = { value: 0 }; // no user in the image: root, as upstream says it explicitly
  if (sc.runAsGroup !== undefined) out.runAsGroup = { value: sc.runAsGroup };
  const groups = [...(psc?.fsGroup !== undefined && psc.fsGroup !== null ? [psc.fsGroup] : []), ...(psc?.supplementalGroups ?? [])];
  if (groups.length > 0) out.supplementalGroups = groups;
  // Upstream AddNoNewPrivileges: only an explicit false sets no_new_privs; API validation refuses
  // false together with privileged or CAP_SYS_ADMIN, so here those keep escalation allowed.
  out.noNewPrivs = sc.allowPrivilegeEscalation === false && !privileged && !hasCapability(sc.capabilities, 'SYS_ADMIN');
  const seLinux = selinux(sc.seLinuxOptions);
  if (seLinux) out.selinuxOptions = seLinux;
  const seccomp = seccompProfile(pod, container, inputs);
  out.seccomp = seccomp;
  out.seccompProfilePath = seccompProfilePath(seccomp);
  const apparmor = appArmorProfile(pod, container);
  if (apparmor) {
    out.apparmor = apparmor.profile;
    out.apparmorProfile = apparmor.legacy;
  }
  const proc = procMountPaths(sc, container);
  out.maskedPaths = proc.maskedPaths;
  out.readonlyPaths = proc.readonlyPaths;
  return out;
}

/**
 * The sandbox's security context (upstream generatePodSandboxLinuxConfig): privileged when any
 * container is (containerd refuses a privileged container in an unprivileged sandbox), the
 * pod's user, group and supplemental groups (fsGroup first), SELinux, and RuntimeDefault
 * seccomp for the sandbox's own process whatever the containers ask. Namespaces are the caller's.
 */
export function sandboxSecurityContext(pod: V1Pod): Omit<LinuxSandboxSecurityContext, 'namespaceOptions'> {
  const psc = pod.spec?.securityContext;
  const out: Omit<LinuxSandboxSecurityContext, 'namespaceOptions'> = {
    privileged: hasPrivilegedContainer(pod),
    seccomp: { profileType: 'RuntimeDefault' },
    seccompProfilePath: 'runtime/default',
  };
  if (psc?.runAsUser !== undefined && psc.runAsUser !== null) out.runAsUser = { value: psc.runAsUser };
  if (psc?.runAsGroup !== undefined && psc.runAsGroup !== null) out.runAsGroup = { value: psc.runAsGroup };
  const groups = [...(psc?.fsGroup !== undefined && psc.fsGroup !== null ? [psc.fsGroup] : []), ...(psc?.supplementalGroups ?? [])];
  if (groups.length > 0) out.supplementalGroups = groups;
  const seLinux = selinux(psc?.seLinuxOptions);
  if (seLinux) out.selinuxOptions = seLinux;
  return out;
}
