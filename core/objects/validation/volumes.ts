/**
 * Pod volumes (upstream ValidateVolumes): names, one source per volume, and the sources the
 * kubelet sets up itself (emptyDir, hostPath, configMap, secret, downwardAPI, projected, csi,
 * image). Other sources are checked for their types only; the kubelet reports them at mount
 * time when no plugin serves them.
 */
import { FieldErrors, child, index } from './field-errors.ts';
import {
  isConfigMapKey,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  localNonReservedPath,
  maxLenError,
} from './names.ts';
import { quantityValue } from '../quantity.ts';
import { validateQuantity } from './resources.ts';
import { get, int, isSet, list, nonEmpty, obj, str, type Obj } from './values.ts';

/** The source fields of a v1 Volume (besides `name`), as the API lists them. */
export const VOLUME_SOURCES = [
  'awsElasticBlockStore', 'azureDisk', 'azureFile', 'cephfs', 'cinder', 'configMap', 'csi', 'downwardAPI',
  'emptyDir', 'ephemeral', 'fc', 'flexVolume', 'flocker', 'gcePersistentDisk', 'gitRepo', 'glusterfs',
  'hostPath', 'image', 'iscsi', 'nfs', 'persistentVolumeClaim', 'photonPersistentDisk', 'portworxVolume',
  'projected', 'quobyte', 'rbd', 'scaleIO', 'secret', 'storageos', 'vsphereVolume',
] as const;

const HOST_PATH_TYPES = ['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'];
const STORAGE_MEDIA = ['', 'Memory', 'HugePages'];
const PULL_POLICIES = ['Always', 'Never', 'IfNotPresent'];
const FILE_MODE_ERROR = 'must be a number between 0 and 0777 (octal), both inclusive';

/** Fields a downward API volume file may name (validVolumeDownwardAPIFieldPathExpressions). */
export const VOLUME_FIELD_PATHS = ['metadata.name', 'metadata.namespace', 'metadata.labels', 'metadata.annotations', 'metadata.uid'];
const CPU_DIVISORS = ['1m', '1'];
const MEMORY_DIVISORS = ['1', '1k', '1M', '1G', '1T', '1P', '1E', '1Ki', '1Mi', '1Gi', '1Ti', '1Pi', '1Ei'];
const RESOURCE_FIELDS = ['limits.cpu', 'limits.memory', 'limits.ephemeral-storage', 'requests.cpu', 'requests.memory', 'requests.ephemeral-storage'];

/** A file mode: `mode`, `defaultMode`. */
export function validateMode(v: unknown, path: string, errs: FieldErrors): void {
  const mode = int(v);
  if (mode !== undefined && (mode < 0 || mode > 0o777)) errs.invalid(path, mode, FILE_MODE_ERROR);
}

/**
 * A downward API field selector (`fieldRef`): `fieldPath` one of `supported`, or a label or
 * annotation by key (`metadata.labels['key']`), and apiVersion v1.
 */
export function validateFieldSelector(v: unknown, path: string, errs: FieldErrors, supported: readonly string[]): void {
  const ref = obj(v);
  if (!ref) return;
  const apiVersion = get(ref, 'apiVersion');
  if (nonEmpty(apiVersion) && apiVersion !== 'v1') errs.unsupported(child(path, 'apiVersion'), apiVersion, ['v1']);
  const fieldPath = get(ref, 'fieldPath');
  if (!isSet(fieldPath) || fieldPath === '') return errs.required(child(path, 'fieldPath'));
  if (typeof fieldPath !== 'string') return;
  const sub = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(fieldPath);
  if (sub) {
    const k = sub[2]!;
    errs.invalidEach(child(path, 'fieldPath'), k, isQualifiedName(sub[1] === 'annotations' ? k.toLowerCase() : k));
    return;
  }
  if (!supported.includes(fieldPath)) errs.unsupported(child(path, 'fieldPath'), fieldPath, supported);
}

/**
 * A `resourceFieldRef`: a supported resource, a divisor the resource allows, and (in a
 * volume, where there is no "this container") the container's name.
 */
export function validateResourceFieldSelector(v: unknown, path: string, errs: FieldErrors, inVolume: boolean): void {
  const ref = obj(v);
  if (!ref) return;
  // Upstream requires the container in a volume (there is no "this container") but does not
  // check that it exists: the kubelet reports a missing one when it builds the container.
  if (inVolume && !nonEmpty(get(ref, 'containerName'))) errs.required(child(path, 'containerName'));
  const resource = get(ref, 'resource');
  if (!isSet(resource) || resource === '') return errs.required(child(path, 'resource'));
  if (typeof resource !== 'string') return;
  const hugepages = /^(limits|requests)\.hugepages-/.test(resource);
  if (!RESOURCE_FIELDS.includes(resource) && !hugepages) return errs.unsupported(child(path, 'resource'), resource, RESOURCE_FIELDS);
  const divisor = get(ref, 'divisor');
  if (!isSet(divisor)) return;
  const value = validateQuantity(divisor, child(path, 'divisor'), errs);
  if (value === undefined || value === 0) return;
  const allowed = resource.endsWith('.cpu') ? CPU_DIVISORS : MEMORY_DIVISORS;
  if (!allowed.some((d) => quantityValue(d) === value)) {
    errs.invalid(child(path, 'divisor'), divisor, `only divisor's values ${allowed.join(', ')} are supported with the ${resource.endsWith('.cpu') ? 'cpu' : 'memory'} resource`);
  }
}

/** `items` of a configMap or secret source: a key, a relative path inside the volume, a mode. */
function validateKeyToPaths(v: unknown, path: string, errs: FieldErrors, paths?: Set<string>): void {
  list(v).forEach((item, i) => {
    const at = index(path, i);
    const kp = obj(item);
    if (!kp) return;
    const k = get(kp, 'key');
    if (!nonEmpty(k)) {
      if (!isSet(k) || k === '') errs.required(child(at, 'key'));
    } else errs.invalidEach(child(at, 'key'), k, isConfigMapKey(k));
    validateFilePath(get(kp, 'path'), child(at, 'path'), errs, paths);
    validateMode(get(kp, 'mode'), child(at, 'mode'), errs);
  });
}

/** A projected file's path; `paths` collects the paths of a projected volume to find conflicts. */
function validateFilePath(v: unknown, path: string, errs: FieldErrors, paths?: Set<string>): void {
  if (!isSet(v) || v === '') return errs.required(path);
  const p = str(v);
  if (p === undefined) return;
  errs.invalidEach(path, p, localNonReservedPath(p));
  if (paths) {
    if (paths.has(p)) errs.invalid(path, p, 'conflicting duplicate paths');
    paths.add(p);
  }
}

function validateDownwardAPIItems(v: unknown, path: string, errs: FieldErrors, paths?: Set<string>): void {
  list(v).forEach((item, i) => {
    const at = index(path, i);
    const file = obj(item);
    if (!file) return;
    validateFilePath(get(file, 'path'), child(at, 'path'), errs, paths);
    validateMode(get(file, 'mode'), child(at, 'mode'), errs);
    const fieldRef = get(file, 'fieldRef');
    const resourceRef = get(file, 'resourceFieldRef');
    if (isSet(fieldRef)) {
      validateFieldSelector(fieldRef, child(at, 'fieldRef'), errs, VOLUME_FIELD_PATHS);
      if (isSet(resourceRef)) errs.invalid(at, 'resource', 'fieldRef and resourceFieldRef can not be specified simultaneously');
    } else if (isSet(resourceRef)) {
      validateResourceFieldSelector(resourceRef, child(at, 'resourceFieldRef'), errs, true);
    } else {
      errs.required(at, 'one of fieldRef and resourceFieldRef is required');
    }
  });
}

/** A reference by name that must be given (`configMap.name`, `secret.secretName`). */
function requireName(v: unknown, path: string, errs: FieldErrors): void {
  if (!isSet(v) || v === '') errs.required(path);
}

function validateProjected(src: Obj, path: string, errs: FieldErrors): void {
  const paths = new Set<string>();
  list(get(src, 'sources')).forEach((item, i) => {
    const at = index(child(path, 'sources'), i);
    const s = obj(item);
    if (!s) return;
    const kinds = ['secret', 'configMap', 'downwardAPI', 'serviceAccountToken', 'clusterTrustBundle', 'podCertificate'].filter((k) => isSet(get(s, k)));
    if (kinds.length > 1) errs.forbidden(child(at, kinds[1]!), 'may not specify more than 1 volume type per source');
    const secret = obj(get(s, 'secret'));
    if (secret) {
      requireName(get(secret, 'name'), child(child(at, 'secret'), 'name'), errs);
      validateKeyToPaths(get(secret, 'items'), child(child(at, 'secret'), 'items'), errs, paths);
    }
    const configMap = obj(get(s, 'configMap'));
    if (configMap) {
      requireName(get(configMap, 'name'), child(child(at, 'configMap'), 'name'), errs);
      validateKeyToPaths(get(configMap, 'items'), child(child(at, 'configMap'), 'items'), errs, paths);
    }
    const downward = obj(get(s, 'downwardAPI'));
    if (downward) validateDownwardAPIItems(get(downward, 'items'), child(child(at, 'downwardAPI'), 'items'), errs, paths);
    const token = obj(get(s, 'serviceAccountToken'));
    if (token) {
      const tp = child(at, 'serviceAccountToken');
      const exp = int(get(token, 'expirationSeconds'));
      if (exp !== undefined && exp < 600) errs.invalid(child(tp, 'expirationSeconds'), exp, 'may not specify a duration less than 10 minutes');
      if (exp !== undefined && exp > 2 ** 32) errs.invalid(child(tp, 'expirationSeconds'), exp, 'may not specify a duration larger than 2^32 seconds');
      validateFilePath(get(token, 'path'), child(tp, 'path'), errs, paths);
    }
    if (isSet(get(s, 'clusterTrustBundle'))) errs.forbidden(child(at, 'clusterTrustBundle'), 'static pods may not use ClusterTrustBundle projected volume sources');
    if (isSet(get(s, 'podCertificate'))) errs.forbidden(child(at, 'podCertificate'), 'static pods may not use PodCertificate projected volume sources');
  });
  validateMode(get(src, 'defaultMode'), child(path, 'defaultMode'), errs);
}

function validateSource(type: string, src: Obj, path: string, errs: FieldErrors): void {
  switch (type) {
    case 'hostPath': {
      const p = get(src, 'path');
      if (!isSet(p) || p === '') errs.required(child(path, 'path'));
      else if (typeof p === 'string' && p.split('/').includes('..')) errs.invalid(child(path, 'path'), p, "must not contain '..'");
      const t = get(src, 'type');
      if (typeof t === 'string' && !HOST_PATH_TYPES.includes(t)) errs.unsupported(child(path, 'type'), t, HOST_PATH_TYPES);
      return;
    }
    case 'emptyDir': {
      const medium = get(src, 'medium');
      if (typeof medium === 'string' && !STORAGE_MEDIA.includes(medium) && !/^HugePages-./.test(medium)) errs.unsupported(child(path, 'medium'), medium, [...STORAGE_MEDIA, 'HugePages-<size>']);
      if (isSet(get(src, 'sizeLimit'))) validateQuantity(get(src, 'sizeLimit'), child(path, 'sizeLimit'), errs);
      return;
    }
    case 'configMap':
      requireName(get(src, 'name'), child(path, 'name'), errs);
      validateKeyToPaths(get(src, 'items'), child(path, 'items'), errs);
      validateMode(get(src, 'defaultMode'), child(path, 'defaultMode'), errs);
      return;
    case 'secret':
      requireName(get(src, 'secretName'), child(path, 'secretName'), errs);
      validateKeyToPaths(get(src, 'items'), child(path, 'items'), errs);
      validateMode(get(src, 'defaultMode'), child(path, 'defaultMode'), errs);
      return;
    case 'downwardAPI':
      validateDownwardAPIItems(get(src, 'items'), child(path, 'items'), errs);
      validateMode(get(src, 'defaultMode'), child(path, 'defaultMode'), errs);
      return;
    case 'projected':
      return validateProjected(src, path, errs);
    case 'csi': {
      const driver = get(src, 'driver');
      if (!isSet(driver) || driver === '') errs.required(child(path, 'driver'));
      else if (typeof driver === 'string') {
        if (driver.length > 63) errs.invalid(child(path, 'driver'), driver, maxLenError(63));
        if (!/^[a-zA-Z0-9][-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9]$/.test(driver.slice(0, 64))) {
          errs.invalid(child(path, 'driver'), driver, "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character");
        }
      }
      const secretRef = obj(get(src, 'nodePublishSecretRef'));
      if (secretRef) {
        const name = get(secretRef, 'name');
        if (!nonEmpty(name)) errs.required(child(child(path, 'nodePublishSecretRef'), 'name'));
        else errs.invalidEach(child(child(path, 'nodePublishSecretRef'), 'name'), name, isDNS1123Subdomain(name));
      }
      return;
    }
    case 'image': {
      const ref = get(src, 'reference');
      if (!isSet(ref) || ref === '') errs.required(child(path, 'reference'));
      const policy = get(src, 'pullPolicy');
      if (nonEmpty(policy) && !PULL_POLICIES.includes(policy)) errs.unsupported(child(path, 'pullPolicy'), policy, PULL_POLICIES);
      return;
    }
    case 'persistentVolumeClaim':
      requireName(get(src, 'claimName'), child(path, 'claimName'), errs);
      return;
  }
}

/**
 * `spec.volumes`: unique DNS-label names and at most one source each (a volume without one is
 * an emptyDir, as the API defaults it). Returns the volume names, for the mounts.
 */
export function validateVolumes(v: unknown, path: string, errs: FieldErrors): Set<string> {
  const names = new Set<string>();
  list(v).forEach((item, i) => {
    const at = index(path, i);
    const vol = obj(item);
    if (!vol) return;
    const name = get(vol, 'name');
    if (!nonEmpty(name)) {
      if (!isSet(name) || name === '') errs.required(child(at, 'name'));
    } else {
      errs.invalidEach(child(at, 'name'), name, isDNS1123Label(name));
      if (names.has(name)) errs.duplicate(child(at, 'name'), name);
      names.add(name);
    }
    const sources = VOLUME_SOURCES.filter((k) => isSet(get(vol, k)));
    if (sources.length > 1) errs.forbidden(child(at, sources[1]!), 'may not specify more than 1 volume type');
    for (const type of sources) {
      const src = obj(get(vol, type));
      if (src) validateSource(type, src, child(at, type), errs);
    }
  });
  return names;
}
