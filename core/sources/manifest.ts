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
  V1HTTPGetAction,
  V1LifecycleHandler,
  V1Pod,
  V1PodSpec,
  V1Probe,
  V1ResourceRequirements,
  V1Toleration,
  V1Volume,
} from '@kubernetes/client-node';
import { dropUnknownFields } from '../objects/object-decoder.ts';
import { DocumentError, parseYamlDocuments } from '../objects/yaml-decoder.ts';
import { MAX_DOCUMENT_BYTES } from '../objects/document-limits.ts';
import { validatePod } from '../objects/validation/pod-validation.ts';
import { isDNS1123Subdomain } from '../objects/validation/names.ts';
import { showValue } from '../objects/validation/field-errors.ts';
import { VOLUME_SOURCES } from '../objects/validation/volumes.ts';
import { invalidInput } from '../errors.ts';
import { CONFIG_HASH_ANNOTATION, CONFIG_MIRROR_ANNOTATION, CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../objects/pod-origin.ts';


/**
 * The largest manifest file read. Upstream's file source reads up to 10 MiB (common.go
 * maxConfigLength), but the API server takes no request body over 3 MiB, so a larger pod could
 * never have a mirror pod, and parsing 10 MiB of hostile YAML costs more than any pod is worth:
 * the API server's limit, which the decoder also applies to the document once its aliases are
 * expanded.
 */
export const MAX_MANIFEST_BYTES = MAX_DOCUMENT_BYTES;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Parses one static pod manifest (YAML or JSON; JSON is YAML) holding exactly one Pod and
 * validates it. Unknown fields are dropped, as upstream's decoder does. Throws an
 * `InvalidInput` KubeletError whose message starts with the file name and gives every
 * problem found (`field: reason`, separated by '; '), or for a file that is not YAML, the
 * line, column and reason, never the file's content. Needs the API models: await
 * `loadObjectModels()` once before the first call.
 */
export function parseManifest(text: string, file: string): V1Pod {
  // No `cause`: a logged error shows its cause's message, and the parser's quotes the file.
  const fail = (reason: string): never => {
    throw invalidInput(`static pod manifest ${file}: ${reason}`);
  };
  const docs = boundedDocuments(text, fail, 'file');
  if (docs.length === 0) fail('file is empty (expected one Pod)');
  if (docs.length > 1) fail(`file holds ${docs.length} YAML documents; a manifest must hold exactly one Pod`);
  return podFromObject(docs[0], fail, true);
}

/** A decoded object as a validated Pod (unknown fields dropped); `fail` throws with the reason. `needKind`: items of a PodList may omit kind and apiVersion. */
function podFromObject(obj: unknown, fail: (reason: string) => never, needKind: boolean): V1Pod {
  if (!isObject(obj)) fail(`expected a Pod object, got ${Array.isArray(obj) ? 'a list' : typeof obj}`);
  const raw = obj as Record<string, unknown>;
  const missing = (v: unknown) => v === undefined || v === null || v === '';
  if (needKind || !missing(raw.kind)) {
    if (missing(raw.kind)) fail("Object 'Kind' is missing (expected kind: Pod)");
    if (raw.kind !== 'Pod') fail(`kind is ${showScalar(raw.kind)}, expected Pod`);
  }
  if (needKind || !missing(raw.apiVersion)) {
    if (missing(raw.apiVersion)) fail("Object 'apiVersion' is missing (expected apiVersion: v1)");
    if (raw.apiVersion !== 'v1') fail(`apiVersion is ${showScalar(raw.apiVersion)}, expected v1`);
  }
  const pod = dropUnknownFields<V1Pod>({ ...raw, kind: 'Pod', apiVersion: 'v1' });
  const problems = validatePod(pod);
  if (problems.length > 0) fail(`invalid pod: ${problems.join('; ')}`);
  return pod;
}

/** The YAML documents of a manifest text, after the size check; a size or syntax problem goes to `fail` (which throws). */
function boundedDocuments(text: string, fail: (reason: string) => never, what: string): unknown[] {
  if (text.length > MAX_MANIFEST_BYTES || Buffer.byteLength(text, 'utf8') > MAX_MANIFEST_BYTES) fail(`${what} is larger than ${MAX_MANIFEST_BYTES} bytes`);
  try {
    return parseYamlDocuments(text);
  } catch (err) {
    if (err instanceof DocumentError) fail(`not valid YAML or JSON: ${err.message}`);
    throw err;
  }
}

/**
 * What a static pod URL serves (upstream's http source): one Pod, or a PodList (`kind: PodList`
 * or `List`) whose items are Pods. Any invalid item refuses the whole answer, as upstream
 * does (the source then keeps its last good set). Throws InvalidInput naming `url`.
 */
export function parsePodsDocument(text: string, url: string): V1Pod[] {
  const fail = (reason: string): never => {
    throw invalidInput(`static pod manifest URL ${url}: ${reason}`);
  };
  const docs = boundedDocuments(text, fail, 'the answer');
  if (docs.length !== 1) fail(`the answer holds ${docs.length} YAML documents; expected one Pod or one PodList`);
  const obj = docs[0];
  if (!isObject(obj)) fail(`expected a Pod or a PodList, got ${Array.isArray(obj) ? 'a list' : typeof obj}`);
  const kind = (obj as Record<string, unknown>).kind;
  if (kind !== 'PodList' && kind !== 'List') return [podFromObject(obj, fail, true)];
  const items = (obj as Record<string, unknown>).items;
  if (items !== undefined && items !== null && !Array.isArray(items)) fail('items: must be a list');
  return ((items as unknown[] | undefined) ?? []).map((item, i) => podFromObject(item, (reason) => fail(`items[${i}]: ${reason}`), false));
}

/** A kind or apiVersion as the message quotes it: short, and only what the field held. */
function showScalar(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}...` : v);
  if (typeof v === 'object') return Array.isArray(v) ? 'a list' : 'an object';
  return String(v);
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

function defaultVolume(v: V1Volume): void {
  const vr = v as unknown as Record<string, unknown>;
  if (!VOLUME_SOURCES.some((k) => vr[k] !== undefined && vr[k] !== null)) v.emptyDir = {};
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
  // The v1 -> internal conversion upstream decodes a pod through: the deprecated serviceAccount
  // names the service account when serviceAccountName does not (the downward API reads it).
  if (!spec.serviceAccountName && spec.serviceAccount) spec.serviceAccountName = spec.serviceAccount;
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
      // Without a prototype, a key named `__proto__` is stored as a key, not as the prototype.
      const out: Record<string, unknown> = Object.create(null);
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
  // Upstream hashes a manifest file as `file:<path>` and a URL's pods as `url:<url>`.
  h.update(`${opts.source === 'http' ? 'url' : opts.source}:${opts.file ?? ''}`);
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
  const nameErrors = isDNS1123Subdomain(name);
  if (nameErrors.length > 0) {
    const problems = nameErrors.map((m) => `metadata.name: Invalid value: ${showValue(name)}: as the static pod's name (with "-${opts.nodeName.toLowerCase()}" appended) ${m}`);
    throw invalidInput(`static pod manifest ${where}: invalid pod: ${problems.join('; ')}`);
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
