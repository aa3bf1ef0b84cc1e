/**
 * Static pod manifests: parsing, validation, API defaulting and the static pod treatment
 * the upstream kubelet's file source applies (pkg/kubelet/config/common.go applyDefaults).
 *
 * Upstream order, kept here because the UID depends on it:
 *   1. decode the manifest (unknown fields dropped) and apply the v1 API defaults
 *      (pkg/apis/core/v1/defaults.go + generated declarative defaults);
 *   2. if metadata.uid is empty, UID = hex(hash(pod) + "host:<nodeName>" + "file:<path>");
 *   3. name += "-" + lower(nodeName), namespace defaults to "default", spec.nodeName = nodeName,
 *      annotation kubernetes.io/config.hash = UID, a NoExecute "Exists" toleration,
 *      status.phase = Pending;
 *   4. the pod config merger adds kubernetes.io/config.source and kubernetes.io/config.seen.
 */
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import type {
  V1Container,
  V1ContainerPort,
  V1HTTPGetAction,
  V1LifecycleHandler,
  V1Pod,
  V1PodSpec,
  V1Probe,
  V1ResourceRequirements,
  V1Toleration,
  V1Volume,
} from '@kubernetes/client-node';
import { dropUnknownFields, parseYamlDocument } from '../api/object-decoder.ts';
import { invalidInput, errorMessage } from '../errors.ts';

/** Annotation keys used by the kubelet (upstream pkg/kubelet/types/pod_update.go). */
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';
export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** Upstream's 10 MiB cap on a config (manifest) file (common.go maxConfigLength). */
export const MAX_MANIFEST_BYTES = 10 * 1024 * 1024;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const IANA_SVC_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const PULL_POLICIES = ['Always', 'Never', 'IfNotPresent'];
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'];

export function isDns1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

export function isDns1123Subdomain(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Splits a YAML stream into documents on lines that are exactly `---` (as kubectl's
 * YAML reader does), dropping documents that hold only whitespace and comments.
 */
function splitYamlDocuments(text: string): string[] {
  const docs: string[] = [];
  let current: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (/^---\s*$/.test(line)) {
      docs.push(current.join('\n'));
      current = [];
    } else {
      current.push(line);
    }
  }
  docs.push(current.join('\n'));
  return docs.filter((d) => d.split('\n').some((l) => l.trim() !== '' && !l.trim().startsWith('#') && l.trim() !== '...'));
}

/**
 * Parses one static pod manifest (YAML or JSON; JSON is YAML) holding exactly one Pod and
 * validates it. Unknown fields are dropped, as upstream's decoder does. Throws an
 * `InvalidInput` KubeletError whose message starts with the file name and gives every
 * problem found. Needs the API models: await `loadObjectModels()` once before the first call.
 */
export function parseManifest(text: string, file: string): V1Pod {
  const fail = (reason: string, cause?: unknown): never => {
    throw invalidInput(`static pod manifest ${file}: ${reason}`, cause);
  };
  if (Buffer.byteLength(text, 'utf8') > MAX_MANIFEST_BYTES) fail(`file is larger than ${MAX_MANIFEST_BYTES} bytes`);
  const docs = splitYamlDocuments(text);
  if (docs.length === 0) fail('file is empty (expected one Pod)');
  if (docs.length > 1) fail(`file holds ${docs.length} YAML documents; a manifest must hold exactly one Pod`);

  let obj: unknown;
  try {
    obj = parseYamlDocument(docs[0]!);
  } catch (err) {
    const msg = errorMessage(err);
    if (/single document/i.test(msg)) fail('file holds more than one YAML document; a manifest must hold exactly one Pod', err);
    fail(`not valid YAML or JSON: ${msg.split('\n')[0]}`, err);
  }
  if (obj === undefined || obj === null) fail('document is empty (expected one Pod)');
  if (!isObject(obj)) fail(`expected a Pod object, got ${Array.isArray(obj) ? 'a list' : typeof obj}`);
  const raw = obj as Record<string, unknown>;
  if (raw.kind === undefined || raw.kind === '') fail("Object 'Kind' is missing (expected kind: Pod)");
  if (raw.kind !== 'Pod') fail(`kind is ${JSON.stringify(raw.kind)}, expected Pod`);
  if (raw.apiVersion === undefined || raw.apiVersion === '') fail("Object 'apiVersion' is missing (expected apiVersion: v1)");
  if (raw.apiVersion !== 'v1') fail(`apiVersion is ${JSON.stringify(raw.apiVersion)}, expected v1`);

  const pod = dropUnknownFields<V1Pod>(obj);
  const problems = validatePod(pod);
  if (problems.length > 0) fail(`invalid pod: ${problems.join('; ')}`);
  return pod;
}

/** A subset of upstream's ValidatePodCreate: what the kubelet itself relies on. */
function validatePod(pod: V1Pod): string[] {
  const errs: string[] = [];
  const meta = pod.metadata;
  if (!isObject(meta)) {
    errs.push('metadata: Required value');
    return errs;
  }
  if (typeof meta.name !== 'string' || meta.name === '') errs.push('metadata.name: Required value: name is needed for the pod');
  else if (!isDns1123Subdomain(meta.name)) errs.push(`metadata.name: Invalid value ${JSON.stringify(meta.name)}: must be a lowercase RFC 1123 subdomain (at most 253 characters of [a-z0-9-.], starting and ending with an alphanumeric character)`);
  if (meta.namespace !== undefined && meta.namespace !== '') {
    if (typeof meta.namespace !== 'string' || !isDns1123Label(meta.namespace)) errs.push(`metadata.namespace: Invalid value ${JSON.stringify(meta.namespace)}: must be a lowercase RFC 1123 label`);
  }
  if (meta.uid !== undefined && typeof meta.uid !== 'string') errs.push('metadata.uid: must be a string');
  for (const field of ['labels', 'annotations'] as const) {
    const m = meta[field];
    if (m === undefined || m === null) continue;
    if (!isObject(m)) errs.push(`metadata.${field}: must be a map of strings`);
    else for (const [k, v] of Object.entries(m)) if (typeof v !== 'string') errs.push(`metadata.${field}[${k}]: value must be a string`);
  }

  const spec = pod.spec;
  if (!isObject(spec)) {
    errs.push('spec: Required value');
    return errs;
  }
  const volumeNames = new Set<string>();
  if (spec.volumes !== undefined) {
    if (!Array.isArray(spec.volumes)) errs.push('spec.volumes: must be a list');
    else
      spec.volumes.forEach((v, i) => {
        const where = `spec.volumes[${i}]`;
        if (!isObject(v) || typeof v.name !== 'string' || v.name === '') return void errs.push(`${where}.name: Required value`);
        if (!isDns1123Label(v.name)) errs.push(`${where}.name: Invalid value ${JSON.stringify(v.name)}: must be a lowercase RFC 1123 label`);
        if (volumeNames.has(v.name)) errs.push(`${where}.name: Duplicate value ${JSON.stringify(v.name)}`);
        volumeNames.add(v.name);
        for (const s of v.projected?.sources ?? []) {
          if (isObject(s) && s.clusterTrustBundle) errs.push(`${where}: static pods may not use ClusterTrustBundle projected volume sources`);
        }
      });
  }
  if (Array.isArray(spec.resourceClaims) && spec.resourceClaims.length > 0) errs.push('spec.resourceClaims: static pods may not use ResourceClaims');

  if (!Array.isArray(spec.containers) || spec.containers.length === 0) errs.push('spec.containers: Required value: a pod needs at least one container');
  const containerNames = new Map<string, string>();
  const checkContainers = (list: unknown, field: string): void => {
    if (list === undefined || list === null) return;
    if (!Array.isArray(list)) return void errs.push(`${field}: must be a list`);
    list.forEach((c: unknown, i) => {
      const where = `${field}[${i}]`;
      if (!isObject(c)) return void errs.push(`${where}: must be an object`);
      const ctr = c as unknown as V1Container;
      if (typeof ctr.name !== 'string' || ctr.name === '') errs.push(`${where}.name: Required value`);
      else {
        if (!isDns1123Label(ctr.name)) errs.push(`${where}.name: Invalid value ${JSON.stringify(ctr.name)}: must be a lowercase RFC 1123 label`);
        const prev = containerNames.get(ctr.name);
        if (prev !== undefined) errs.push(`${where}.name: Duplicate value ${JSON.stringify(ctr.name)} (also ${prev})`);
        else containerNames.set(ctr.name, where);
      }
      if (typeof ctr.image !== 'string' || ctr.image.trim() === '') errs.push(`${where}.image: Required value`);
      else if (ctr.image !== ctr.image.trim()) errs.push(`${where}.image: must not have leading or trailing whitespace`);
      if (ctr.imagePullPolicy !== undefined && ctr.imagePullPolicy !== '' && !PULL_POLICIES.includes(ctr.imagePullPolicy)) {
        errs.push(`${where}.imagePullPolicy: Unsupported value ${JSON.stringify(ctr.imagePullPolicy)}: supported values: ${PULL_POLICIES.join(', ')}`);
      }
      if (ctr.ports !== undefined) {
        if (!Array.isArray(ctr.ports)) errs.push(`${where}.ports: must be a list`);
        else
          ctr.ports.forEach((p: V1ContainerPort, j) => {
            const pw = `${where}.ports[${j}]`;
            if (!isObject(p)) return void errs.push(`${pw}: must be an object`);
            if (!Number.isInteger(p.containerPort) || p.containerPort < 1 || p.containerPort > 65535) errs.push(`${pw}.containerPort: Invalid value ${JSON.stringify(p.containerPort)}: must be between 1 and 65535, inclusive`);
            if (p.hostPort !== undefined && p.hostPort !== 0 && (!Number.isInteger(p.hostPort) || p.hostPort < 1 || p.hostPort > 65535)) errs.push(`${pw}.hostPort: Invalid value ${JSON.stringify(p.hostPort)}: must be between 1 and 65535, inclusive`);
            if (p.protocol !== undefined && p.protocol !== '' && !PROTOCOLS.includes(p.protocol)) errs.push(`${pw}.protocol: Unsupported value ${JSON.stringify(p.protocol)}: supported values: ${PROTOCOLS.join(', ')}`);
            if (p.name !== undefined && p.name !== '' && !(typeof p.name === 'string' && p.name.length <= 15 && IANA_SVC_NAME.test(p.name) && /[a-z]/.test(p.name) && !p.name.includes('--'))) {
              errs.push(`${pw}.name: Invalid value ${JSON.stringify(p.name)}: must be an IANA_SVC_NAME (at most 15 lowercase alphanumerics or '-', with a letter)`);
            }
          });
      }
      if (ctr.volumeMounts !== undefined) {
        if (!Array.isArray(ctr.volumeMounts)) errs.push(`${where}.volumeMounts: must be a list`);
        else
          ctr.volumeMounts.forEach((m, j) => {
            const mw = `${where}.volumeMounts[${j}]`;
            if (!isObject(m)) return void errs.push(`${mw}: must be an object`);
            if (typeof m.name !== 'string' || m.name === '') errs.push(`${mw}.name: Required value`);
            else if (!volumeNames.has(m.name)) errs.push(`${mw}.name: Not found: ${JSON.stringify(m.name)} (no such volume)`);
            if (typeof m.mountPath !== 'string' || m.mountPath === '') errs.push(`${mw}.mountPath: Required value`);
          });
      }
    });
  };
  checkContainers(spec.containers, 'spec.containers');
  checkContainers(spec.initContainers, 'spec.initContainers');

  if (spec.restartPolicy !== undefined && spec.restartPolicy !== '' && !RESTART_POLICIES.includes(spec.restartPolicy)) {
    errs.push(`spec.restartPolicy: Unsupported value ${JSON.stringify(spec.restartPolicy)}: supported values: ${RESTART_POLICIES.join(', ')}`);
  }
  if (spec.dnsPolicy !== undefined && spec.dnsPolicy !== '' && !DNS_POLICIES.includes(spec.dnsPolicy)) {
    errs.push(`spec.dnsPolicy: Unsupported value ${JSON.stringify(spec.dnsPolicy)}: supported values: ${DNS_POLICIES.join(', ')}`);
  }
  const tgps = spec.terminationGracePeriodSeconds;
  if (tgps !== undefined && tgps !== null && (!Number.isInteger(tgps) || tgps < 0)) {
    errs.push(`spec.terminationGracePeriodSeconds: Invalid value ${JSON.stringify(tgps)}: must be a non-negative integer`);
  }
  const ads = spec.activeDeadlineSeconds;
  if (ads !== undefined && ads !== null && (!Number.isInteger(ads) || ads < 1)) {
    errs.push(`spec.activeDeadlineSeconds: Invalid value ${JSON.stringify(ads)}: must be a positive integer`);
  }
  return errs;
}

/**
 * Image tag as upstream's parsers.ParseImageName sees it: the tag if any; "latest" when the
 * reference has neither tag nor digest; "" for a digest-only reference.
 */
export function imageTag(image: string): string {
  const at = image.indexOf('@');
  const named = at >= 0 ? image.slice(0, at) : image;
  const digest = at >= 0 ? image.slice(at + 1) : '';
  const lastSlash = named.lastIndexOf('/');
  const colon = named.lastIndexOf(':');
  const tag = colon > lastSlash ? named.slice(colon + 1) : '';
  if (tag === '' && digest === '') return 'latest';
  return tag;
}

/** Upstream's default pull policy: Always for a `latest` (or absent) tag, else IfNotPresent. */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  return imageTag(image) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultHttpGet(h: V1HTTPGetAction | undefined): void {
  if (!h) return;
  if (!h.path) h.path = '/';
  if (!h.scheme) h.scheme = 'HTTP';
}

function defaultProbe(p: V1Probe | undefined): void {
  if (!p) return;
  if (!p.timeoutSeconds) p.timeoutSeconds = 1;
  if (!p.periodSeconds) p.periodSeconds = 10;
  if (!p.successThreshold) p.successThreshold = 1;
  if (!p.failureThreshold) p.failureThreshold = 3;
  defaultHttpGet(p.httpGet);
  if (p.grpc && p.grpc.service === undefined) p.grpc.service = '';
}

function defaultHandler(h: V1LifecycleHandler | undefined): void {
  if (h) defaultHttpGet(h.httpGet);
}

/** Resource quantities written as YAML numbers (`cpu: 1`) become strings, as the API serializes them. */
function normalizeQuantities(r: V1ResourceRequirements | undefined): void {
  if (!r) return;
  for (const m of [r.limits, r.requests]) {
    if (!m) continue;
    for (const [k, v] of Object.entries(m)) if (typeof v === 'number') m[k] = String(v);
  }
}

function defaultContainer(c: V1Container, hostNetwork: boolean): void {
  if (!c.imagePullPolicy) c.imagePullPolicy = defaultPullPolicy(c.image ?? '');
  if (!c.terminationMessagePath) c.terminationMessagePath = '/dev/termination-log';
  if (!c.terminationMessagePolicy) c.terminationMessagePolicy = 'File';
  for (const p of c.ports ?? []) {
    if (!p.protocol) p.protocol = 'TCP';
    if (hostNetwork && !p.hostPort) p.hostPort = p.containerPort;
  }
  normalizeQuantities(c.resources);
  // SetDefaults_Pod: requests default to limits when not given.
  const limits = c.resources?.limits;
  if (c.resources && limits && Object.keys(limits).length > 0) {
    const requests = (c.resources.requests ??= {});
    for (const [k, v] of Object.entries(limits)) if (!(k in requests)) requests[k] = v;
  }
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
  defaultHandler(c.lifecycle?.postStart);
  defaultHandler(c.lifecycle?.preStop);
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.fieldRef;
    if (ref && !ref.apiVersion) ref.apiVersion = 'v1';
  }
}

const VOLUME_SOURCE_KEYS = [
  'awsElasticBlockStore', 'azureDisk', 'azureFile', 'cephfs', 'cinder', 'configMap', 'csi', 'downwardAPI',
  'emptyDir', 'ephemeral', 'fc', 'flexVolume', 'flocker', 'gcePersistentDisk', 'gitRepo', 'glusterfs',
  'hostPath', 'image', 'iscsi', 'nfs', 'persistentVolumeClaim', 'photonPersistentDisk', 'portworxVolume',
  'projected', 'quobyte', 'rbd', 'scaleIO', 'secret', 'storageos', 'vsphereVolume',
] as const;

function defaultVolume(v: V1Volume): void {
  const vr = v as unknown as Record<string, unknown>;
  if (!VOLUME_SOURCE_KEYS.some((k) => vr[k] !== undefined && vr[k] !== null)) v.emptyDir = {};
  if (v.secret && v.secret.defaultMode === undefined) v.secret.defaultMode = 0o644;
  if (v.configMap && v.configMap.defaultMode === undefined) v.configMap.defaultMode = 0o644;
  if (v.downwardAPI) {
    if (v.downwardAPI.defaultMode === undefined) v.downwardAPI.defaultMode = 0o644;
    for (const item of v.downwardAPI.items ?? []) if (item.fieldRef && !item.fieldRef.apiVersion) item.fieldRef.apiVersion = 'v1';
  }
  if (v.projected) {
    if (v.projected.defaultMode === undefined) v.projected.defaultMode = 0o644;
    for (const s of v.projected.sources ?? []) {
      if (s.serviceAccountToken && s.serviceAccountToken.expirationSeconds === undefined) s.serviceAccountToken.expirationSeconds = 3600;
      for (const item of s.downwardAPI?.items ?? []) if (item.fieldRef && !item.fieldRef.apiVersion) item.fieldRef.apiVersion = 'v1';
    }
  }
  if (v.hostPath && v.hostPath.type === undefined) v.hostPath.type = '';
  if (v.image && !v.image.pullPolicy) v.image.pullPolicy = defaultPullPolicy(v.image.reference ?? '');
}

/**
 * Applies the v1 API defaults the kubelet relies on (upstream pkg/apis/core/v1/defaults.go
 * SetDefaults_Pod/PodSpec/Container/Probe/Volume/... and the generated declarative defaults),
 * in place. Returns the same pod.
 */
export function applyPodDefaults(pod: V1Pod): V1Pod {
  const spec: V1PodSpec = (pod.spec ??= { containers: [] });
  if (!spec.dnsPolicy) spec.dnsPolicy = 'ClusterFirst';
  if (!spec.restartPolicy) spec.restartPolicy = 'Always';
  if (!spec.securityContext) spec.securityContext = {};
  if (spec.terminationGracePeriodSeconds === undefined || spec.terminationGracePeriodSeconds === null) spec.terminationGracePeriodSeconds = 30;
  if (!spec.schedulerName) spec.schedulerName = 'default-scheduler';
  if (spec.enableServiceLinks === undefined || spec.enableServiceLinks === null) spec.enableServiceLinks = true;
  const hostNetwork = spec.hostNetwork === true;
  for (const c of spec.containers ?? []) defaultContainer(c, hostNetwork);
  for (const c of spec.initContainers ?? []) defaultContainer(c, hostNetwork);
  for (const v of spec.volumes ?? []) defaultVolume(v);
  return pod;
}

/** JSON with object keys sorted at every level and undefined values dropped: stable input for hashing. */
export function canonicalJson(value: unknown): string {
  const norm = (v: unknown): unknown => {
    if (v instanceof Date) return v.toISOString();
    if (Array.isArray(v)) return v.map((x) => (x === undefined ? null : norm(x)));
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort()) {
        const x = (v as Record<string, unknown>)[k];
        if (x !== undefined && typeof x !== 'function') out[k] = norm(x);
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(norm(value)) ?? 'null';
}

export interface StaticPodOptions {
  /** This node's name; the pod name gets `-<lowercased nodeName>` appended. */
  nodeName: string;
  /** Source name for the `kubernetes.io/config.source` annotation: 'file', 'http'. */
  source: string;
  /** Where the manifest came from (file path or URL); part of the UID hash, as upstream. */
  file?: string;
  /** Value for `kubernetes.io/config.seen` (default: now, ISO 8601). */
  seen?: string;
}

/**
 * The static pod UID upstream-style: a 128-bit hash (32 hex chars) of the API-defaulted pod,
 * then `host:<nodeName>` and `<source>:<file>` (for the file source: `file:<path>`).
 * Canonical JSON makes it independent of key order and formatting of the manifest.
 */
export function staticPodUid(defaultedPod: V1Pod, opts: Pick<StaticPodOptions, 'nodeName' | 'source' | 'file'>): string {
  const h = createHash('md5');
  h.update(canonicalJson(defaultedPod));
  h.update(`host:${opts.nodeName}`);
  h.update(`${opts.source}:${opts.file ?? ''}`);
  return h.digest('hex');
}

/**
 * Returns a copy of `pod` with the API defaults and the static pod treatment applied:
 * deterministic UID (kept if the manifest sets metadata.uid, as upstream), name suffixed
 * with `-<nodeName>`, namespace `default`, spec.nodeName, annotations config.source /
 * config.hash (= UID) / config.seen (no config.mirror), the NoExecute "Exists" toleration
 * and status.phase Pending. Throws InvalidInput if the resulting name is invalid.
 */
export function applyStaticPodDefaults(pod: V1Pod, opts: StaticPodOptions): V1Pod {
  const where = opts.file ?? opts.source;
  const out = structuredClone(pod) as V1Pod;
  out.metadata ??= {};
  const meta = out.metadata;
  if (meta.annotations) {
    delete meta.annotations[CONFIG_MIRROR_ANNOTATION];
    // Annotations the kubelet owns are not taken from the manifest (nor hashed).
    delete meta.annotations[CONFIG_SEEN_ANNOTATION];
    delete meta.annotations[CONFIG_SOURCE_ANNOTATION];
    delete meta.annotations[CONFIG_HASH_ANNOTATION];
  }
  applyPodDefaults(out);
  if (typeof meta.name !== 'string' || meta.name === '') throw invalidInput(`static pod manifest ${where}: invalid pod: metadata.name: Required value`);

  const uid = meta.uid ? meta.uid : staticPodUid(out, opts);
  meta.uid = uid;
  const name = `${meta.name}-${opts.nodeName.toLowerCase()}`;
  if (!isDns1123Subdomain(name)) {
    throw invalidInput(`static pod manifest ${where}: invalid pod: static pod name ${JSON.stringify(name)} (name + "-" + node name) is not a valid RFC 1123 subdomain of at most 253 characters`);
  }
  meta.name = name;
  if (!meta.namespace) meta.namespace = 'default';
  out.spec!.nodeName = opts.nodeName;
  meta.annotations = {
    ...(meta.annotations ?? {}),
    [CONFIG_HASH_ANNOTATION]: uid,
    [CONFIG_SOURCE_ANNOTATION]: opts.source,
    [CONFIG_SEEN_ANNOTATION]: opts.seen ?? new Date().toISOString(),
  };
  const tol: V1Toleration = { operator: 'Exists', effect: 'NoExecute' };
  const tolerations = (out.spec!.tolerations ??= []);
  const same = (t: V1Toleration) => (t.key ?? '') === '' && t.operator === 'Exists' && (t.value ?? '') === '' && t.effect === 'NoExecute';
  if (!tolerations.some(same)) tolerations.push(tol);
  out.status = { ...(out.status ?? {}), phase: 'Pending' };
  return out;
}

/** Absolute, normalized form of a manifest path, as used in the UID hash by the dir source. */
export function manifestPath(dir: string, name: string): string {
  return path.join(path.resolve(dir), name);
}
