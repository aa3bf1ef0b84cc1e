/**
 * Containers and init containers (upstream validateContainers, validateInitContainers and
 * what they call): names, image, pull policy, ports, env, resources, probes, lifecycle
 * handlers, volume mounts, security context and restart policy.
 */
import { FieldErrors, child, index } from './field-errors.ts';
import {
  isConfigMapKey,
  isDNS1123Label,
  isEnvVarName,
  isHTTPHeaderName,
  isValidID,
  isValidIP,
  isValidPortName,
  isValidPortNum,
  localDescendingPath,
} from './names.ts';
import { validateResourceRequirements } from './resources.ts';
import { validateFieldSelector, validateResourceFieldSelector } from './volumes.ts';
import { get, int, isSet, list, nonEmpty, obj, str, type Obj } from './values.ts';

const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'];
const TERMINATION_MESSAGE_POLICIES = ['File', 'FallbackToLogsOnError'];
const MOUNT_PROPAGATION = ['None', 'HostToContainer', 'Bidirectional'];
const RECURSIVE_READ_ONLY = ['Disabled', 'IfPossible', 'Enabled'];
const PROC_MOUNT = ['Default', 'Unmasked'];
const SECCOMP_TYPES = ['RuntimeDefault', 'Unconfined', 'Localhost'];
const SCHEMES = ['HTTP', 'HTTPS'];
const PROBE_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'grpc'];
const LIFECYCLE_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'sleep'];
/** Fields an env var may read through the downward API (validEnvDownwardAPIFieldPathExpressions). */
const ENV_FIELD_PATHS = [
  'metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName',
  'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs',
];

/** What a container's rules need from the pod around it. */
export interface PodContext {
  volumes: ReadonlySet<string>;
  hostNetwork: boolean;
  /** The pod's grace period (30 s when not set): a preStop sleep may not exceed it. */
  gracePeriodSeconds: number;
  /** `hostIP/protocol/port` of each host port seen so far, across all containers. */
  hostPorts: Set<string>;
}

/** A port given as a number or a name (`httpGet.port`, `tcpSocket.port`). */
function validatePortNumOrName(v: unknown, path: string, errs: FieldErrors): void {
  if (!isSet(v) || v === '' || v === 0) return errs.required(path);
  if (typeof v === 'number') errs.invalidEach(path, v, isValidPortNum(v));
  else if (typeof v === 'string') errs.invalidEach(path, v, isValidPortName(v));
}

/** One handler of a probe or lifecycle hook. */
function validateHandlerAction(kind: string, v: unknown, path: string, errs: FieldErrors, ctx: PodContext): void {
  const h = obj(v);
  if (!h) return;
  switch (kind) {
    case 'exec':
    {
      const command = get(h, 'command');
      if (!isSet(command) || (Array.isArray(command) && command.length === 0)) errs.required(child(path, 'command'));
      return;
    }
    case 'httpGet': {
      validatePortNumOrName(get(h, 'port'), child(path, 'port'), errs);
      const scheme = get(h, 'scheme');
      if (nonEmpty(scheme) && !SCHEMES.includes(scheme)) errs.unsupported(child(path, 'scheme'), scheme, SCHEMES);
      list(get(h, 'httpHeaders')).forEach((header, i) => {
        const name = get(obj(header), 'name');
        const at = child(index(child(path, 'httpHeaders'), i), 'name');
        if (!nonEmpty(name)) {
          if (!isSet(name) || name === '') errs.required(at);
        } else errs.invalidEach(at, name, isHTTPHeaderName(name));
      });
      return;
    }
    case 'tcpSocket':
      return validatePortNumOrName(get(h, 'port'), child(path, 'port'), errs);
    case 'grpc': {
      const port = get(h, 'port');
      if (!isSet(port)) errs.required(child(path, 'port'));
      else if (typeof port === 'number') errs.invalidEach(child(path, 'port'), port, isValidPortNum(port));
      return;
    }
    case 'sleep': {
      const seconds = get(h, 'seconds');
      if (!isSet(seconds)) return errs.required(child(path, 'seconds'));
      const s = int(seconds);
      if (s === undefined) return;
      if (s < 0) errs.invalid(child(path, 'seconds'), s, 'must be greater than or equal to 0');
      else if (s > ctx.gracePeriodSeconds) errs.invalid(child(path, 'seconds'), s, 'must be less than terminationGracePeriodSeconds');
      return;
    }
  }
}

/** Exactly one handler of `kinds` is set; each is checked. */
function validateHandler(v: unknown, path: string, errs: FieldErrors, kinds: readonly string[], ctx: PodContext): void {
  const h = obj(v);
  if (!h) return;
  const set = kinds.filter((k) => isSet(get(h, k)));
  if (set.length === 0) return errs.required(path, 'must specify a handler type');
  if (set.length > 1) errs.forbidden(child(path, set[1]!), 'may not specify more than 1 handler type');
  for (const k of set) validateHandlerAction(k, get(h, k), child(path, k), errs, ctx);
}

function validateProbe(v: unknown, path: string, errs: FieldErrors, type: 'liveness' | 'readiness' | 'startup', ctx: PodContext): void {
  const p = obj(v);
  if (!p) return;
  validateHandler(p, path, errs, PROBE_HANDLERS, ctx);
  for (const f of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold']) {
    const n = int(get(p, f));
    if (n !== undefined && n < 0) errs.invalid(child(path, f), n, 'must be greater than or equal to 0');
  }
  const success = int(get(p, 'successThreshold'));
  if (type !== 'readiness' && success !== undefined && success > 1) errs.invalid(child(path, 'successThreshold'), success, 'must be 1');
  const grace = int(get(p, 'terminationGracePeriodSeconds'));
  if (grace !== undefined && grace <= 0) errs.invalid(child(path, 'terminationGracePeriodSeconds'), grace, 'must be greater than 0');
}

function validateLifecycle(v: unknown, path: string, errs: FieldErrors, ctx: PodContext): void {
  const l = obj(v);
  if (!l) return;
  for (const hook of ['postStart', 'preStop']) {
    if (isSet(get(l, hook))) validateHandler(get(l, hook), child(path, hook), errs, LIFECYCLE_HANDLERS, ctx);
  }
}

function validatePorts(v: unknown, path: string, errs: FieldErrors, ctx: PodContext): void {
  const names = new Set<string>();
  list(v).forEach((item, i) => {
    const at = index(path, i);
    const p = obj(item);
    if (!p) return;
    const name = get(p, 'name');
    if (nonEmpty(name)) {
      errs.invalidEach(child(at, 'name'), name, isValidPortName(name));
      if (names.has(name)) errs.duplicate(child(at, 'name'), name);
      names.add(name);
    }
    const containerPort = get(p, 'containerPort');
    if (!isSet(containerPort) || containerPort === 0) errs.required(child(at, 'containerPort'));
    else if (typeof containerPort === 'number') errs.invalidEach(child(at, 'containerPort'), containerPort, isValidPortNum(containerPort));
    const hostPort = get(p, 'hostPort');
    if (typeof hostPort === 'number' && hostPort !== 0) {
      errs.invalidEach(child(at, 'hostPort'), hostPort, isValidPortNum(hostPort));
      if (ctx.hostNetwork && typeof containerPort === 'number' && hostPort !== containerPort) {
        errs.invalid(child(at, 'hostPort'), hostPort, 'must match `containerPort` when `hostNetwork` is true');
      }
    }
    const protocol = get(p, 'protocol');
    if (nonEmpty(protocol) && !PROTOCOLS.includes(protocol)) errs.unsupported(child(at, 'protocol'), protocol, PROTOCOLS);
    const hostIP = get(p, 'hostIP');
    if (nonEmpty(hostIP)) errs.invalidEach(child(at, 'hostIP'), hostIP, isValidIP(hostIP));
    // Host ports are the node's: one per protocol and address (AccumulateUniqueHostPorts).
    const effectiveHostPort = ctx.hostNetwork && (hostPort === undefined || hostPort === null || hostPort === 0) ? containerPort : hostPort;
    if (typeof effectiveHostPort === 'number' && effectiveHostPort !== 0) {
      const id = `${str(hostIP) ?? ''}/${nonEmpty(protocol) ? protocol : 'TCP'}/${effectiveHostPort}`;
      if (ctx.hostPorts.has(id)) errs.duplicate(child(at, 'hostPort'), id);
      ctx.hostPorts.add(id);
    }
  });
}

function validateEnv(v: unknown, path: string, errs: FieldErrors): void {
  list(v).forEach((item, i) => {
    const at = index(path, i);
    const e = obj(item);
    if (!e) return;
    const name = get(e, 'name');
    if (!nonEmpty(name)) {
      if (!isSet(name) || name === '') errs.required(child(at, 'name'));
    } else errs.invalidEach(child(at, 'name'), name, isEnvVarName(name));
    const from = obj(get(e, 'valueFrom'));
    if (!from) return;
    const fp = child(at, 'valueFrom');
    const sources = ['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef', 'fileKeyRef'].filter((k) => isSet(get(from, k)));
    if (sources.length === 0) errs.invalid(fp, '', 'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`');
    else if (sources.length > 1) errs.invalid(fp, '', 'may not have more than one field specified at a time');
    if (nonEmpty(get(e, 'value'))) errs.invalid(fp, '', 'may not be specified when `value` is not empty');
    if (isSet(get(from, 'fieldRef'))) validateFieldSelector(get(from, 'fieldRef'), child(fp, 'fieldRef'), errs, ENV_FIELD_PATHS);
    if (isSet(get(from, 'resourceFieldRef'))) validateResourceFieldSelector(get(from, 'resourceFieldRef'), child(fp, 'resourceFieldRef'), errs, false);
    for (const ref of ['configMapKeyRef', 'secretKeyRef']) {
      const sel = obj(get(from, ref));
      if (!sel) continue;
      if (!nonEmpty(get(sel, 'name'))) errs.required(child(child(fp, ref), 'name'));
      const k = get(sel, 'key');
      if (!nonEmpty(k)) errs.required(child(child(fp, ref), 'key'));
      else errs.invalidEach(child(child(fp, ref), 'key'), k, isConfigMapKey(k));
    }
  });
}

function validateEnvFrom(v: unknown, path: string, errs: FieldErrors): void {
  list(v).forEach((item, i) => {
    const at = index(path, i);
    const e = obj(item);
    if (!e) return;
    const prefix = get(e, 'prefix');
    if (nonEmpty(prefix)) errs.invalidEach(child(at, 'prefix'), prefix, isEnvVarName(prefix));
    const sources = ['configMapRef', 'secretRef'].filter((k) => isSet(get(e, k)));
    if (sources.length === 0) errs.invalid(at, '', 'must specify one of: `configMapRef` or `secretRef`');
    if (sources.length > 1) errs.invalid(at, '', 'may not have more than one field specified at a time');
    for (const s of sources) if (!nonEmpty(get(obj(get(e, s)), 'name'))) errs.required(child(child(at, s), 'name'));
  });
}

function validateVolumeMounts(v: unknown, path: string, errs: FieldErrors, ctx: PodContext, privileged: boolean): void {
  const mountPaths = new Set<string>();
  list(v).forEach((item, i) => {
    const at = index(path, i);
    const m = obj(item);
    if (!m) return;
    const name = get(m, 'name');
    if (!nonEmpty(name)) {
      if (!isSet(name) || name === '') errs.required(child(at, 'name'));
    } else if (!ctx.volumes.has(name)) errs.notFound(child(at, 'name'), name);
    const mountPath = get(m, 'mountPath');
    if (!nonEmpty(mountPath)) {
      if (!isSet(mountPath) || mountPath === '') errs.required(child(at, 'mountPath'));
    } else {
      if (mountPaths.has(mountPath)) errs.invalid(child(at, 'mountPath'), mountPath, 'must be unique');
      mountPaths.add(mountPath);
    }
    const subPath = get(m, 'subPath');
    if (nonEmpty(subPath)) errs.invalidEach(child(at, 'subPath'), subPath, localDescendingPath(subPath));
    const subPathExpr = get(m, 'subPathExpr');
    if (nonEmpty(subPathExpr)) {
      if (nonEmpty(subPath)) errs.invalid(child(at, 'subPathExpr'), subPathExpr, 'subPathExpr and subPath are mutually exclusive');
      errs.invalidEach(child(at, 'subPathExpr'), subPathExpr, localDescendingPath(subPathExpr));
    }
    const propagation = get(m, 'mountPropagation');
    if (nonEmpty(propagation)) {
      if (!MOUNT_PROPAGATION.includes(propagation)) errs.unsupported(child(at, 'mountPropagation'), propagation, MOUNT_PROPAGATION);
      else if (propagation === 'Bidirectional' && !privileged) errs.forbidden(child(at, 'mountPropagation'), 'Bidirectional mount propagation is available only to privileged containers');
    }
    const rro = get(m, 'recursiveReadOnly');
    if (nonEmpty(rro)) {
      if (!RECURSIVE_READ_ONLY.includes(rro)) errs.unsupported(child(at, 'recursiveReadOnly'), rro, RECURSIVE_READ_ONLY);
      else if (rro !== 'Disabled' && get(m, 'readOnly') !== true) errs.forbidden(child(at, 'recursiveReadOnly'), 'may only be specified when readOnly is true');
    }
  });
}

/** A seccomp or AppArmor profile: a known type, and a profile name for Localhost. */
function validateProfile(v: unknown, path: string, errs: FieldErrors, types: readonly string[]): void {
  const p = obj(v);
  if (!p) return;
  const type = get(p, 'type');
  if (!isSet(type) || type === '') return errs.required(child(path, 'type'));
  if (typeof type !== 'string') return;
  if (!types.includes(type)) return errs.unsupported(child(path, 'type'), type, types);
  if (type === 'Localhost' && !nonEmpty(get(p, 'localhostProfile'))) errs.required(child(path, 'localhostProfile'), 'must be set when seccomp type is Localhost');
}

/** The user and group fields and profiles pod and container security contexts share. */
export function validateSecurityContextIds(sc: Obj, path: string, errs: FieldErrors): void {
  for (const f of ['runAsUser', 'runAsGroup']) {
    const id = int(get(sc, f));
    if (id !== undefined) errs.invalidEach(child(path, f), id, isValidID(id));
  }
  validateProfile(get(sc, 'seccompProfile'), child(path, 'seccompProfile'), errs, SECCOMP_TYPES);
  validateProfile(get(sc, 'appArmorProfile'), child(path, 'appArmorProfile'), errs, SECCOMP_TYPES);
}

function validateSecurityContext(v: unknown, path: string, errs: FieldErrors): void {
  const sc = obj(v);
  if (!sc) return;
  validateSecurityContextIds(sc, path, errs);
  if (get(sc, 'privileged') === true && get(sc, 'allowPrivilegeEscalation') === false) {
    errs.invalid(child(path, 'allowPrivilegeEscalation'), false, 'cannot set `allowPrivilegeEscalation` to false and `privileged` to true');
  }
  const procMount = get(sc, 'procMount');
  if (nonEmpty(procMount) && !PROC_MOUNT.includes(procMount)) errs.unsupported(child(path, 'procMount'), procMount, PROC_MOUNT);
}

/**
 * One container of `spec.containers` or `spec.initContainers`. `names` collects the names of
 * the pod's containers (unique across both lists).
 */
function validateContainer(c: Obj, path: string, errs: FieldErrors, ctx: PodContext, names: Map<string, string>, init: boolean): void {
  const name = get(c, 'name');
  if (!nonEmpty(name)) {
    if (!isSet(name) || name === '') errs.required(child(path, 'name'));
  } else {
    errs.invalidEach(child(path, 'name'), name, isDNS1123Label(name));
    if (names.has(name)) errs.duplicate(child(path, 'name'), name);
    else names.set(name, path);
  }
  const image = get(c, 'image');
  if (!isSet(image) || (typeof image === 'string' && image.trim() === '')) errs.required(child(path, 'image'));
  else if (typeof image === 'string' && image !== image.trim()) errs.invalid(child(path, 'image'), image, 'must not have leading or trailing whitespace');
  const pullPolicy = get(c, 'imagePullPolicy');
  if (nonEmpty(pullPolicy) && !PULL_POLICIES.includes(pullPolicy)) errs.unsupported(child(path, 'imagePullPolicy'), pullPolicy, PULL_POLICIES);
  const tmp = get(c, 'terminationMessagePolicy');
  if (nonEmpty(tmp) && !TERMINATION_MESSAGE_POLICIES.includes(tmp)) errs.unsupported(child(path, 'terminationMessagePolicy'), tmp, TERMINATION_MESSAGE_POLICIES);

  validatePorts(get(c, 'ports'), child(path, 'ports'), errs, ctx);
  validateEnv(get(c, 'env'), child(path, 'env'), errs);
  validateEnvFrom(get(c, 'envFrom'), child(path, 'envFrom'), errs);
  validateResourceRequirements(get(c, 'resources'), child(path, 'resources'), errs);
  const sc = obj(get(c, 'securityContext'));
  validateVolumeMounts(get(c, 'volumeMounts'), child(path, 'volumeMounts'), errs, ctx, get(sc, 'privileged') === true);
  validateSecurityContext(sc, child(path, 'securityContext'), errs);

  // A sidecar is an init container that keeps running; only it may have probes and hooks.
  const restartPolicy = get(c, 'restartPolicy');
  const sidecar = init && restartPolicy === 'Always';
  if (isSet(restartPolicy)) {
    if (!init) errs.forbidden(child(path, 'restartPolicy'), 'may not be set for non-init containers');
    else if (typeof restartPolicy === 'string' && restartPolicy !== 'Always') errs.unsupported(child(path, 'restartPolicy'), restartPolicy, ['Always']);
  }
  const probes = [['livenessProbe', 'liveness'], ['readinessProbe', 'readiness'], ['startupProbe', 'startup']] as const;
  for (const [field, type] of probes) {
    if (!isSet(get(c, field))) continue;
    if (init && !sidecar) errs.forbidden(child(path, field), 'may not be set for init containers without restartPolicy=Always');
    else validateProbe(get(c, field), child(path, field), errs, type, ctx);
  }
  if (isSet(get(c, 'lifecycle'))) {
    if (init && !sidecar) errs.forbidden(child(path, 'lifecycle'), 'may not be set for init containers without restartPolicy=Always');
    else validateLifecycle(get(c, 'lifecycle'), child(path, 'lifecycle'), errs, ctx);
  }
}

/** A list of containers (`init`: initContainers); `names` is shared by both lists. */
export function validateContainers(v: unknown, path: string, errs: FieldErrors, ctx: PodContext, names: Map<string, string>, init: boolean): void {
  list(v).forEach((item, i) => {
    const c = obj(item);
    if (c) validateContainer(c, index(path, i), errs, ctx, names, init);
  });
}

