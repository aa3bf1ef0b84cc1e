/**
 * Validation of a decoded v1 Pod, as the API server validates one on create
 * (pkg/apis/core/validation ValidatePodCreate), for every field the kubelet reads, plus what a
 * static pod may not use. First the type of every field (./structural.ts, from the API models),
 * then the semantic rules on values of the right type. Each problem is one `field.path: reason`
 * line in upstream's wording.
 *
 * The input is hostile: any value of any type anywhere. validatePod never throws; should a
 * rule itself fail, the pod is refused with that as its problem rather than accepted unchecked.
 */
import { modelAttributes } from '../object-decoder.ts';
import { validateContainers, validateSecurityContextIds, type PodContext } from './containers.ts';
import { FieldErrors, child, index, kindOf } from './field-errors.ts';
import { inclusiveRangeError, isDNS1123Label, isDNS1123Subdomain, isQualifiedName, isValidID, isValidIP, isValidLabelValue, isValidSysctlName } from './names.ts';
import { validateLabels, validateObjectMeta } from './object-meta.ts';
import { validateResourceList } from './resources.ts';
import { checkTypes } from './structural.ts';
import { validateVolumes } from './volumes.ts';
import { get, int, isSet, list, nonEmpty, obj, str, type Obj } from './values.ts';

const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const TOLERATION_OPERATORS = ['Equal', 'Exists'];
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
const OS_NAMES = ['linux', 'windows'];
const FS_GROUP_CHANGE_POLICIES = ['OnRootMismatch', 'Always'];
const SUPPLEMENTAL_GROUPS_POLICIES = ['Merge', 'Strict'];
const INT32_MAX = 2 ** 31 - 1;
const MAX_DNS_NAMESERVERS = 3;
const MAX_DNS_SEARCH_PATHS = 32;
const MAX_DNS_SEARCH_LIST_CHARS = 2048;
const DEFAULT_GRACE_PERIOD_SECONDS = 30;

/**
 * Every problem of `pod` as `field.path: reason` (empty when it is valid). Needs the API models
 * (loadObjectModels) for the type check; without them the pod is refused, not let through.
 */
export function validatePod(pod: unknown): string[] {
  const errs = new FieldErrors();
  try {
    const root = obj(pod);
    if (!root) {
      errs.add('<root>', `expected a Pod object, got ${kindOf(pod)}`);
      return errs.messages();
    }
    if (!modelAttributes('V1Pod')) {
      errs.add('<root>', 'cannot validate: the API models are not loaded (await loadObjectModels() first)');
      return errs.messages();
    }
    checkTypes(root, 'V1Pod', '', errs);
    validateObjectMeta(get(root, 'metadata'), 'metadata', errs);
    validatePodSpec(get(root, 'spec'), 'spec', errs);
  } catch (err) {
    errs.add('<root>', `internal error while validating the pod (${err instanceof Error ? err.name : typeof err}); refusing it`);
  }
  return errs.messages();
}

function validatePodSpec(v: unknown, path: string, errs: FieldErrors): void {
  if (!isSet(v)) return errs.required(path);
  const spec = obj(v);
  if (!spec) return;

  const containers = get(spec, 'containers');
  if (!isSet(containers) || (Array.isArray(containers) && containers.length === 0)) {
    errs.required(child(path, 'containers'), 'a pod needs at least one container');
  }
  const volumes = validateVolumes(get(spec, 'volumes'), child(path, 'volumes'), errs);
  const grace = int(get(spec, 'terminationGracePeriodSeconds'));
  const ctx: PodContext = {
    volumes,
    hostNetwork: get(spec, 'hostNetwork') === true,
    gracePeriodSeconds: grace ?? DEFAULT_GRACE_PERIOD_SECONDS,
    hostPorts: new Set(),
  };
  // Init containers first: upstream reports a name used by both on the app container.
  const names = new Map<string, string>();
  validateContainers(get(spec, 'initContainers'), child(path, 'initContainers'), errs, ctx, names, true);
  validateContainers(containers, child(path, 'containers'), errs, ctx, names, false);
  if (list(get(spec, 'ephemeralContainers')).length > 0) errs.forbidden(child(path, 'ephemeralContainers'), 'cannot be set on create');

  enumField(spec, 'restartPolicy', RESTART_POLICIES, path, errs);
  enumField(spec, 'dnsPolicy', DNS_POLICIES, path, errs);
  if (grace !== undefined && grace < 0) errs.invalid(child(path, 'terminationGracePeriodSeconds'), grace, 'must be greater than or equal to 0');
  const deadline = int(get(spec, 'activeDeadlineSeconds'));
  if (deadline !== undefined && (deadline < 1 || deadline > INT32_MAX)) errs.invalid(child(path, 'activeDeadlineSeconds'), deadline, inclusiveRangeError(1, INT32_MAX));

  validateLabels(get(spec, 'nodeSelector'), child(path, 'nodeSelector'), errs);
  for (const f of ['serviceAccountName', 'serviceAccount', 'nodeName', 'schedulerName', 'runtimeClassName', 'priorityClassName']) {
    const s = get(spec, f);
    if (nonEmpty(s)) errs.invalidEach(child(path, f), s, isDNS1123Subdomain(s));
  }
  for (const f of ['hostname', 'subdomain']) {
    const s = get(spec, f);
    if (nonEmpty(s)) errs.invalidEach(child(path, f), s, isDNS1123Label(s));
  }
  if (get(spec, 'shareProcessNamespace') === true && get(spec, 'hostPID') === true) {
    errs.invalid(child(path, 'shareProcessNamespace'), true, 'ShareProcessNamespace and HostPID cannot both be enabled');
  }
  // A pod with a user namespace of its own cannot share the host's namespaces (KEP-127's restriction, upstream's words).
  if (get(spec, 'hostUsers') === false) {
    for (const f of ['hostNetwork', 'hostPID', 'hostIPC']) {
      if (get(spec, f) === true) errs.forbidden(child(path, f), 'when `pod.Spec.HostUsers` is false');
    }
  }
  const os = obj(get(spec, 'os'));
  if (os) enumField(os, 'name', OS_NAMES, child(path, 'os'), errs, true);
  validatePodSecurityContext(get(spec, 'securityContext'), child(path, 'securityContext'), errs);
  validateDNS(spec, path, errs);
  validateHostAliases(get(spec, 'hostAliases'), child(path, 'hostAliases'), errs);
  validateTolerations(get(spec, 'tolerations'), child(path, 'tolerations'), errs);
  validateResourceList(get(spec, 'overhead'), child(path, 'overhead'), errs);
  list(get(spec, 'imagePullSecrets')).forEach((s, i) => {
    const name = get(obj(s), 'name');
    if (nonEmpty(name)) errs.invalidEach(child(index(child(path, 'imagePullSecrets'), i), 'name'), name, isDNS1123Subdomain(name));
  });
  // What needs an API server: a static pod cannot have it.
  if (list(get(spec, 'resourceClaims')).length > 0) errs.forbidden(child(path, 'resourceClaims'), 'static pods may not use ResourceClaims');
}

/** An enum field: a set value must be one of `allowed` (empty is unset, and defaulted). */
function enumField(o: Obj, field: string, allowed: readonly string[], path: string, errs: FieldErrors, required = false): void {
  const v = get(o, field);
  if (required && (!isSet(v) || v === '')) return errs.required(child(path, field));
  if (nonEmpty(v) && !allowed.includes(v)) errs.unsupported(child(path, field), v, allowed);
}

function validatePodSecurityContext(v: unknown, path: string, errs: FieldErrors): void {
  const sc = obj(v);
  if (!sc) return;
  validateSecurityContextIds(sc, path, errs);
  const fsGroup = int(get(sc, 'fsGroup'));
  if (fsGroup !== undefined) errs.invalidEach(child(path, 'fsGroup'), fsGroup, isValidID(fsGroup));
  list(get(sc, 'supplementalGroups')).forEach((g, i) => {
    if (typeof g === 'number') errs.invalidEach(index(child(path, 'supplementalGroups'), i), g, isValidID(g));
  });
  enumField(sc, 'fsGroupChangePolicy', FS_GROUP_CHANGE_POLICIES, path, errs);
  enumField(sc, 'supplementalGroupsPolicy', SUPPLEMENTAL_GROUPS_POLICIES, path, errs);
  const sysctls = new Set<string>();
  list(get(sc, 'sysctls')).forEach((s, i) => {
    const at = index(child(path, 'sysctls'), i);
    const name = get(obj(s), 'name');
    if (!nonEmpty(name)) {
      if (obj(s) && (!isSet(name) || name === '')) errs.required(child(at, 'name'));
      return;
    }
    errs.invalidEach(child(at, 'name'), name, isValidSysctlName(name));
    if (sysctls.has(name)) errs.duplicate(child(at, 'name'), name);
    sysctls.add(name);
  });
}

function validateDNS(spec: Obj, path: string, errs: FieldErrors): void {
  const config = obj(get(spec, 'dnsConfig'));
  const at = child(path, 'dnsConfig');
  const nameservers = list(get(config, 'nameservers'));
  if (get(spec, 'dnsPolicy') === 'None' && nameservers.length === 0) {
    errs.required(child(at, 'nameservers'), 'must provide at least one DNS nameserver when `dnsPolicy` is None');
  }
  if (!config) return;
  if (nameservers.length > MAX_DNS_NAMESERVERS) errs.invalid(child(at, 'nameservers'), nameservers, `must not have more than ${MAX_DNS_NAMESERVERS} nameservers`);
  nameservers.forEach((ns, i) => {
    if (typeof ns === 'string') errs.invalidEach(index(child(at, 'nameservers'), i), ns, isValidIP(ns));
  });
  const searches = list(get(config, 'searches'));
  if (searches.length > MAX_DNS_SEARCH_PATHS) errs.invalid(child(at, 'searches'), searches, `must not have more than ${MAX_DNS_SEARCH_PATHS} search paths`);
  let chars = 0;
  searches.forEach((s, i) => {
    if (typeof s !== 'string') return;
    chars += s.length + 1;
    // A trailing dot makes a search domain absolute, and is allowed.
    const domain = s.endsWith('.') ? s.slice(0, -1) : s;
    errs.invalidEach(index(child(at, 'searches'), i), s, isDNS1123Subdomain(domain));
  });
  if (chars - 1 > MAX_DNS_SEARCH_LIST_CHARS) errs.invalid(child(at, 'searches'), searches, `must not have more than ${MAX_DNS_SEARCH_LIST_CHARS} characters (including spaces) in the search list`);
  list(get(config, 'options')).forEach((o, i) => {
    const name = get(obj(o), 'name');
    if (obj(o) && (!isSet(name) || name === '')) errs.required(child(index(child(at, 'options'), i), 'name'));
  });
}

function validateHostAliases(v: unknown, path: string, errs: FieldErrors): void {
  list(v).forEach((item, i) => {
    const at = index(path, i);
    const alias = obj(item);
    if (!alias) return;
    const ip = get(alias, 'ip');
    if (typeof ip === 'string') errs.invalidEach(child(at, 'ip'), ip, isValidIP(ip));
    else if (!isSet(ip)) errs.required(child(at, 'ip'));
    list(get(alias, 'hostnames')).forEach((h, j) => {
      if (typeof h === 'string') errs.invalidEach(index(child(at, 'hostnames'), j), h, isDNS1123Subdomain(h));
    });
  });
}

function validateTolerations(v: unknown, path: string, errs: FieldErrors): void {
  list(v).forEach((item, i) => {
    const at = index(path, i);
    const t = obj(item);
    if (!t) return;
    const k = get(t, 'key');
    if (nonEmpty(k)) errs.invalidEach(child(at, 'key'), k, isQualifiedName(k));
    const operator = str(get(t, 'operator')) ?? '';
    if (!nonEmpty(k) && operator !== 'Exists') {
      errs.invalid(child(at, 'operator'), operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"');
    }
    const effect = get(t, 'effect');
    if (isSet(get(t, 'tolerationSeconds')) && effect !== 'NoExecute') {
      errs.invalid(child(at, 'effect'), effect ?? '', "effect must be 'NoExecute' when `tolerationSeconds` is set");
    }
    const value = str(get(t, 'value')) ?? '';
    if (operator === '' || operator === 'Equal') errs.invalidEach(child(at, 'value'), value, isValidLabelValue(value));
    else if (operator === 'Exists') {
      if (value !== '') errs.invalid(child(at, 'operator'), value, "value must be empty when `operator` is 'Exists'");
    } else errs.unsupported(child(at, 'operator'), operator, TOLERATION_OPERATORS);
    if (nonEmpty(effect) && !TAINT_EFFECTS.includes(effect)) errs.unsupported(child(at, 'effect'), effect, TAINT_EFFECTS);
  });
}
