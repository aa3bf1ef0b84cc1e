import assert from 'node:assert/strict';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS, SecurityContextError, appArmorProfile, containerSecurityContext, criCapabilities,
  effectiveSecurityContext, hasPrivilegedContainer, needsImageUser, requiresAppArmor, sandboxSecurityContext, seccompProfile, verifyRunAsNonRoot,
} from '../../core/pod/security-context.ts';
import { buildContainerConfig, ContainerConfigError } from '../../core/pod/container-config.ts';
import { buildSandboxConfig } from '../../core/pod/sandbox-config.ts';
import { SecurityAdmission } from '../../core/pod/security-admission.ts';
import { SysctlAllowlist, normalizeSysctlName, podSysctls, sysctlNamespace } from '../../core/pod/sysctls.ts';
import { activeDeadlineLeftMs } from '../../core/pod/active-deadline.ts';

const ROOT = '/var/lib/kubelet/seccomp';

function pod(spec: Partial<V1Pod['spec']> = {}, container: Partial<V1Container> = {}, annotations?: Record<string, string>): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'ns', uid: 'u1', ...(annotations ? { annotations } : {}) },
    spec: { containers: [{ name: 'app', image: 'busybox', ...container }], ...spec } as V1Pod['spec'],
  };
}
const app = (p: V1Pod) => p.spec!.containers[0]!;
const sc = (p: V1Pod, image: { uid?: number; username?: string } = {}, extra: object = {}) => containerSecurityContext(p, app(p), { image, seccompProfileRoot: ROOT, ...extra });
const throwsSc = (fn: () => unknown, re: RegExp) => assert.throws(fn, (err: unknown) => err instanceof SecurityContextError && re.test((err as Error).message));

describe('security context mapping (upstream determineEffectiveSecurityContext)', () => {
  it('merges the pod-level user fields under the container-level ones', () => {
    const p = pod({ securityContext: { runAsUser: 1, runAsGroup: 2, runAsNonRoot: true, seLinuxOptions: { level: 's0' } } }, { securityContext: { runAsUser: 5 } });
    assert.deepEqual(effectiveSecurityContext(p, app(p)), { runAsUser: 5, runAsGroup: 2, runAsNonRoot: true, seLinuxOptions: { level: 's0' } });
    assert.equal(needsImageUser(p, app(p)), false);
    assert.equal(needsImageUser(pod(), app(pod())), true);
  });

  it('runAsNonRoot: refuses uid 0 from the spec or the image, a named image user, and allows a numeric non-root one', () => {
    const nonRoot = pod({ securityContext: { runAsNonRoot: true } });
    assert.equal(verifyRunAsNonRoot(nonRoot, app(nonRoot), {}), 'container has runAsNonRoot and image will run as root (pod: "web_ns(u1)", container: app)');
    assert.equal(verifyRunAsNonRoot(nonRoot, app(nonRoot), { uid: 0 }), 'container has runAsNonRoot and image will run as root (pod: "web_ns(u1)", container: app)');
    assert.equal(verifyRunAsNonRoot(nonRoot, app(nonRoot), { username: 'www' }), 'container has runAsNonRoot and image has non-numeric user (www), cannot verify user is non-root (pod: "web_ns(u1)", container: app)');
    assert.equal(verifyRunAsNonRoot(nonRoot, app(nonRoot), { uid: 1000 }), undefined);
    const zero = pod({ securityContext: { runAsNonRoot: true, runAsUser: 0 } });
    assert.equal(verifyRunAsNonRoot(zero, app(zero), { uid: 1000 }), `container's runAsUser breaks non-root policy (pod: "web_ns(u1)", container: app)`);
    const spec = pod({}, { securityContext: { runAsNonRoot: true, runAsUser: 7 } });
    assert.equal(verifyRunAsNonRoot(spec, app(spec), {}), undefined, 'the spec user wins over the image');
    assert.equal(verifyRunAsNonRoot(pod(), app(pod()), {}), undefined, 'no runAsNonRoot, no check');
    throwsSc(() => sc(nonRoot), /image will run as root/);
  });

  it('the user: the spec, else the image uid, else the image user name, else root', () => {
    assert.deepEqual(sc(pod({ securityContext: { runAsUser: 7, runAsGroup: 8 } }), { uid: 1000 }).runAsUser, { value: 7 });
    assert.deepEqual(sc(pod({ securityContext: { runAsGroup: 8 } })).runAsGroup, { value: 8 });
    assert.deepEqual(sc(pod(), { uid: 1000 }).runAsUser, { value: 1000 });
    const named = sc(pod(), { username: 'www' });
    assert.equal(named.runAsUsername, 'www');
    assert.equal(named.runAsUser, undefined);
    assert.deepEqual(sc(pod()).runAsUser, { value: 0 });
  });

  it('supplemental groups: fsGroup first, then supplementalGroups; none when neither', () => {
    assert.deepEqual(sc(pod({ securityContext: { fsGroup: 2000, supplementalGroups: [4000, 5000] } })).supplementalGroups, [2000, 4000, 5000]);
    assert.deepEqual(sc(pod({ securityContext: { supplementalGroups: [4000] } })).supplementalGroups, [4000]);
    assert.equal(sc(pod()).supplementalGroups, undefined);
  });

  it('no_new_privs only for an explicit allowPrivilegeEscalation false, never with privileged or CAP_SYS_ADMIN', () => {
    assert.equal(sc(pod()).noNewPrivs, false);
    assert.equal(sc(pod({}, { securityContext: { allowPrivilegeEscalation: true } })).noNewPrivs, false);
    assert.equal(sc(pod({}, { securityContext: { allowPrivilegeEscalation: false } })).noNewPrivs, true);
    assert.equal(sc(pod({}, { securityContext: { allowPrivilegeEscalation: false, privileged: true } })).noNewPrivs, false);
    assert.equal(sc(pod({}, { securityContext: { allowPrivilegeEscalation: false, capabilities: { add: ['CAP_SYS_ADMIN'] } } })).noNewPrivs, false);
    assert.equal(sc(pod({}, { securityContext: { allowPrivilegeEscalation: false, capabilities: { add: ['sys_admin'] } } })).noNewPrivs, false);
  });

  it('capabilities as CRI carries them: upper case, no CAP_ prefix, ALL kept, an unknown name refused', () => {
    assert.deepEqual(criCapabilities(['net_admin', 'CAP_SYS_TIME', 'ALL', 'NET_ADMIN'], 'add'), ['NET_ADMIN', 'SYS_TIME', 'ALL']);
    assert.deepEqual(criCapabilities(undefined, 'drop'), []);
    throwsSc(() => criCapabilities(['BOGUS'], 'add'), /capabilities\.add: unknown capability "BOGUS"/);
    throwsSc(() => criCapabilities(['CAP_'], 'drop'), /unknown capability "CAP_"/);
    assert.deepEqual(sc(pod({}, { securityContext: { capabilities: { drop: ['all'], add: ['CAP_NET_RAW'] } } })).capabilities, { addCapabilities: ['NET_RAW'], dropCapabilities: ['ALL'] });
    assert.equal(sc(pod()).capabilities, undefined, 'none asked: the runtime default set');
  });

  it('privileged, read-only root, SELinux', () => {
    const out = sc(pod({ securityContext: { seLinuxOptions: { type: 'spc_t' } } }, { securityContext: { privileged: true, readOnlyRootFilesystem: true } }));
    assert.equal(out.privileged, true);
    assert.equal(out.readonlyRootfs, true);
    assert.deepEqual(out.selinuxOptions, { user: '', role: '', type: 'spc_t', level: '' });
  });

  it('seccomp: container over pod; unset is Unconfined (RuntimeDefault with seccompDefault); Localhost under the root; both CRI spellings', () => {
    const c = (p: V1Pod, extra = {}) => seccompProfile(p, app(p), { seccompProfileRoot: ROOT, ...extra });
    assert.deepEqual(c(pod()), { profileType: 'Unconfined' });
    assert.deepEqual(c(pod(), { seccompDefault: true }), { profileType: 'RuntimeDefault' });
    assert.deepEqual(c(pod({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } })), { profileType: 'RuntimeDefault' });
    assert.deepEqual(c(pod({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }, { securityContext: { seccompProfile: { type: 'Unconfined' } } })), { profileType: 'Unconfined' });
    assert.deepEqual(c(pod({}, { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'a/b.json' } } })), { profileType: 'Localhost', localhostRef: `${ROOT}/a/b.json` });
    throwsSc(() => c(pod({}, { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: '../x.json' } } })), /relative path without '\.\.'/);
    throwsSc(() => c(pod({}, { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: '/etc/x.json' } } })), /relative path/);
    throwsSc(() => c(pod({}, { securityContext: { seccompProfile: { type: 'Localhost' } } })), /localhostProfile must be set/);
    throwsSc(() => c(pod({}, { securityContext: { seccompProfile: { type: 'Bogus' } } })), /unknown type "Bogus"/);
    const local = sc(pod({ securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } } }));
    assert.deepEqual([local.seccomp, local.seccompProfilePath], [{ profileType: 'Localhost', localhostRef: `${ROOT}/p.json` }, `localhost/${ROOT}/p.json`]);
    assert.equal(sc(pod()).seccompProfilePath, 'unconfined');
    assert.equal(sc(pod({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } })).seccompProfilePath, 'runtime/default');
  });

  it('AppArmor: 1.28 annotation or the later field, mapped to both CRI spellings; an invalid name refused', () => {
    const ann = (v: string) => pod({}, {}, { 'container.apparmor.security.beta.kubernetes.io/app': v });
    assert.deepEqual(appArmorProfile(ann('runtime/default'), app(ann('x'))), { profile: { profileType: 'RuntimeDefault' }, legacy: 'runtime/default' });
    assert.deepEqual(appArmorProfile(ann('unconfined'), app(ann('x'))), { profile: { profileType: 'Unconfined' }, legacy: 'unconfined' });
    assert.deepEqual(appArmorProfile(ann('localhost/k8s-nginx'), app(ann('x'))), { profile: { profileType: 'Localhost', localhostRef: 'k8s-nginx' }, legacy: 'localhost/k8s-nginx' });
    throwsSc(() => appArmorProfile(ann('docker-default'), app(ann('x'))), /invalid AppArmor profile name: "docker-default"/);
    assert.equal(appArmorProfile(pod(), app(pod())), undefined);
    const field = pod({ securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'p' } } } as object, {}, { 'container.apparmor.security.beta.kubernetes.io/app': 'unconfined' });
    assert.deepEqual(appArmorProfile(field, app(field))?.profile, { profileType: 'Localhost', localhostRef: 'p' }, 'the field wins over the annotation');
    assert.equal(requiresAppArmor(ann('runtime/default')), true);
    assert.equal(requiresAppArmor(ann('unconfined')), false);
    assert.equal(requiresAppArmor(pod()), false);
    const out = sc(ann('localhost/p'));
    assert.deepEqual([out.apparmor, out.apparmorProfile], [{ profileType: 'Localhost', localhostRef: 'p' }, 'localhost/p']);
  });

  it('procMount: Default masks upstream\'s paths; Unmasked cannot be honoured through CRI and is refused', () => {
    const out = sc(pod());
    assert.deepEqual(out.maskedPaths, [...DEFAULT_MASKED_PATHS]);
    assert.deepEqual(out.readonlyPaths, [...DEFAULT_READONLY_PATHS]);
    throwsSc(() => sc(pod({}, { securityContext: { procMount: 'Unmasked' } })), /procMount Unmasked cannot be honoured/);
    const priv = sc(pod({}, { securityContext: { procMount: 'Unmasked', privileged: true } }));
    assert.deepEqual([priv.maskedPaths, priv.readonlyPaths], [[], []], 'privileged: the runtime unmasks /proc anyway');
    throwsSc(() => sc(pod({}, { securityContext: { procMount: 'Weird' } })), /unknown procMount "Weird"/);
  });

  it('buildContainerConfig turns a refusal into CreateContainerConfigError and keeps the namespaces', () => {
    const p = pod({ securityContext: { runAsNonRoot: true }, hostPID: true });
    assert.throws(() => buildContainerConfig(p, app(p), 0, { podIP: '', hostIP: '127.0.0.1', env: [] }), (err: unknown) => err instanceof ContainerConfigError && /image will run as root/.test((err as Error).message));
    const ok = buildContainerConfig(p, app(p), 0, { podIP: '', hostIP: '127.0.0.1', env: [] }, { image: { uid: 1000 }, seccompProfileRoot: ROOT });
    assert.deepEqual(ok.linux.securityContext.namespaceOptions, { network: 'POD', pid: 'NODE', ipc: 'POD' });
    assert.deepEqual(ok.linux.securityContext.runAsUser, { value: 1000 });
  });
});

describe('sandbox security context (upstream generatePodSandboxLinuxConfig)', () => {
  it('privileged when any container is, init containers included; RuntimeDefault seccomp; the pod user and groups', () => {
    assert.equal(hasPrivilegedContainer(pod()), false);
    const p = pod({ initContainers: [{ name: 'i', image: 'x', securityContext: { privileged: true } }], securityContext: { runAsUser: 1, runAsGroup: 2, fsGroup: 3, supplementalGroups: [4] } });
    assert.deepEqual(sandboxSecurityContext(p), {
      privileged: true, seccomp: { profileType: 'RuntimeDefault' }, seccompProfilePath: 'runtime/default',
      runAsUser: { value: 1 }, runAsGroup: { value: 2 }, supplementalGroups: [3, 4],
    });
    const cfg = buildSandboxConfig(p, 0, { podLogsDir: '/var/log/pods' });
    assert.equal(cfg.linux.securityContext.privileged, true);
    assert.deepEqual(cfg.linux.securityContext.namespaceOptions, { network: 'POD', pid: 'CONTAINER', ipc: 'POD' });
  });

  it('sysctls go to the sandbox in the dotted form', () => {
    const p = pod({ securityContext: { sysctls: [{ name: 'net/ipv4/conf/eth0.100/forwarding', value: '1' }, { name: 'kernel.shm_rmid_forced', value: '1' }] } });
    assert.deepEqual(podSysctls(p), { 'net.ipv4.conf.eth0/100.forwarding': '1', 'kernel.shm_rmid_forced': '1' });
    assert.deepEqual(buildSandboxConfig(p, 0, { podLogsDir: '/l' }).linux.sysctls, podSysctls(p));
  });
});

describe('sysctl admission (upstream pkg/kubelet/sysctl)', () => {
  const withSysctls = (names: string[], spec: object = {}) => pod({ ...spec, securityContext: { sysctls: names.map((name) => ({ name, value: '1' })) } });

  it('names and namespaces', () => {
    assert.equal(normalizeSysctlName('net/ipv4/ip_forward'), 'net.ipv4.ip_forward');
    assert.equal(normalizeSysctlName('net.ipv4.conf.eth0/100.forwarding'), 'net.ipv4.conf.eth0/100.forwarding');
    assert.equal(sysctlNamespace('kernel.sem'), 'ipc');
    assert.equal(sysctlNamespace('kernel.shmmax'), 'ipc');
    assert.equal(sysctlNamespace('fs.mqueue.msg_max'), 'ipc');
    assert.equal(sysctlNamespace('net.core.somaxconn'), 'net');
    assert.equal(sysctlNamespace('kernel.panic'), undefined);
    assert.equal(sysctlNamespace('vm.swappiness'), undefined);
  });

  it('safe sysctls pass, unsafe ones are forbidden unless allowed by name or prefix', () => {
    const safe = new SysctlAllowlist();
    assert.equal(safe.admit(withSysctls(['net.ipv4.ip_local_port_range', 'kernel.shm_rmid_forced', 'net/ipv4/tcp_syncookies'])), undefined);
    assert.deepEqual(safe.admit(withSysctls(['kernel.msgmax'])), { reason: 'SysctlForbidden', message: 'forbidden sysctl: "kernel.msgmax" not allowlisted' });
    const allowed = new SysctlAllowlist(['kernel.msg*', 'net.core.somaxconn']);
    assert.equal(allowed.admit(withSysctls(['kernel.msgmax', 'kernel.msgmnb', 'net.core.somaxconn'])), undefined);
    assert.match(allowed.admit(withSysctls(['net.core.rmem_max']))!.message, /"net.core.rmem_max" not allowlisted/);
  });

  it('a sysctl of a namespace shared with the host is forbidden', () => {
    const list = new SysctlAllowlist(['kernel.msgmax']);
    assert.equal(list.admit(withSysctls(['net.ipv4.tcp_syncookies'], { hostNetwork: true }))!.message, 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled');
    assert.equal(list.admit(withSysctls(['kernel.msgmax'], { hostIPC: true }))!.message, 'forbidden sysctl: "kernel.msgmax" not allowed with host ipc enabled');
    assert.equal(list.admit(withSysctls(['kernel.msgmax'], { hostNetwork: true })), undefined);
  });

  it('an allowedUnsafeSysctls entry that is not namespaced, or malformed, is refused', () => {
    assert.throws(() => new SysctlAllowlist(['kernel.panic']), /the sysctls "kernel.panic" are not known to be namespaced/);
    assert.throws(() => new SysctlAllowlist(['vm.*']), /"vm." are not known to be namespaced/);
    assert.throws(() => new SysctlAllowlist(['*']), /not known to be namespaced/);
    assert.throws(() => new SysctlAllowlist(['Net.Core']), /must have at most 253 characters/);
    assert.doesNotThrow(() => new SysctlAllowlist(['net.*', 'fs.mqueue.*', 'kernel.sem']));
  });

  it('SecurityAdmission: sysctls first, then AppArmor where the host cannot enforce it', () => {
    const without = new SecurityAdmission({ appArmorEnabled: () => false });
    const withAA = new SecurityAdmission({ appArmorEnabled: () => true });
    const aa = pod({}, {}, { 'container.apparmor.security.beta.kubernetes.io/app': 'runtime/default' });
    assert.deepEqual(without.admit(aa), { reason: 'AppArmor', message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host' });
    assert.equal(withAA.admit(aa), undefined);
    assert.equal(without.admit(pod({}, {}, { 'container.apparmor.security.beta.kubernetes.io/app': 'unconfined' })), undefined);
    assert.equal(without.admit(withSysctls(['kernel.msgmax']))?.reason, 'SysctlForbidden');
    assert.equal(without.admit(pod()), undefined);
  });
});

describe('activeDeadlineSeconds', () => {
  it('counts from the start time; nothing to enforce without a deadline or a start time', () => {
    const p = pod({ activeDeadlineSeconds: 3 });
    assert.equal(activeDeadlineLeftMs(p, new Date(10_000), 11_000), 2000);
    assert.equal(activeDeadlineLeftMs(p, '1970-01-01T00:00:10Z', 13_000), 0);
    assert.equal(activeDeadlineLeftMs(p, new Date(10_000), 14_000), -1000);
    assert.equal(activeDeadlineLeftMs(p, undefined, 14_000), undefined);
    assert.equal(activeDeadlineLeftMs(p, 'not a date', 14_000), undefined);
    assert.equal(activeDeadlineLeftMs(pod(), new Date(10_000), 14_000), undefined);
  });
});
