/**
 * Reads upstream's KubeletConfiguration (kubelet.config.k8s.io/v1beta1, what kubeadm writes to
 * /var/lib/kubelet/config.yaml) into kubelet-ts's config fields, by the rules of
 * upstream-fields.ts: implemented fields with upstream's defaulting, fields not implemented
 * collected for the one start warning, names upstream does not have refused with the nearest one.
 */
import { configSchema } from './schema.ts';
import { unknownNameHint } from '../util/nearest-name.ts';
import { KUBELET_FLAGS } from './upstream-flags.ts';
import { getPath, setPath } from './field-paths.ts';
import {
  KUBELET_CONFIGURATION_API_VERSION,
  KUBELET_CONFIGURATION_KIND,
  UPSTREAM_FIELDS,
  childNames,
  isZero,
  type UpstreamValueType,
} from './upstream-fields.ts';

/** A setting kubelet-ts accepted and ignores, for the start warning. */
export interface IgnoredSetting {
  /** The field (`cgroupDriver`) or flag (`--cloud-provider`). */
  name: string;
  value: unknown;
  /** What kubelet-ts would need to honour it. */
  needs: string;
}

export interface KubeletConfigurationRead {
  /** kubelet-ts config fields (nested objects for dotted paths). */
  input: Record<string, unknown>;
  /** kubelet-ts field path → upstream field path it came from (for naming the source of a bad value). */
  origins: Map<string, string>;
  ignored: IgnoredSetting[];
  errors: string[];
}

/** True when a config document is upstream's KubeletConfiguration rather than kubelet-ts's own format. */
export function isKubeletConfiguration(doc: Record<string, unknown>): boolean {
  return 'kind' in doc || 'apiVersion' in doc;
}

/** kubelet-ts fields upstream's KubeletConfiguration has no field for, by where they belong. */
function kubeletTsOnlyHint(name: string): string | undefined {
  const props = configSchema.properties as Record<string, unknown>;
  if (!Object.hasOwn(props, name) || Object.hasOwn(UPSTREAM_FIELDS, name)) return undefined;
  const flag = Object.entries(KUBELET_FLAGS).find(([, spec]) => spec.kubeletTs === name && !spec.own)?.[0];
  return `${name} is a field of kubelet-ts's own config format, not of KubeletConfiguration: set it in the --plugins-config file${flag ? ` or by --${flag}` : ''}`;
}

/** The schema of a (dotted) kubelet-ts field, if it has one. */
function schemaOf(target: string): Record<string, unknown> | undefined {
  let node: { properties?: Record<string, unknown> } | undefined = configSchema as { properties?: Record<string, unknown> };
  for (const part of target.split('.')) {
    const next = node?.properties?.[part];
    if (next === undefined) return undefined;
    node = next as typeof node;
  }
  return node as Record<string, unknown>;
}

/** What kubelet-ts's schema says a field allows, for messages under the same name. */
export function schemaAllowed(target: string): string | undefined {
  const allowed = schemaOf(target)?.['x-allowed'];
  return typeof allowed === 'string' ? allowed : undefined;
}

const TYPE_WORDS: Record<UpstreamValueType, string> = {
  bool: 'true or false',
  int: 'an integer',
  number: 'a number',
  string: 'a string',
  duration: "a duration such as '10s', '1m30s', '500ms'",
  stringList: 'a list of strings',
  stringMap: 'a map of strings',
  list: 'a list',
  object: 'an object',
  any: 'any value',
};

function typeOk(type: UpstreamValueType, v: unknown): boolean {
  switch (type) {
    case 'bool':
      return typeof v === 'boolean';
    case 'int':
      return Number.isInteger(v);
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'string':
      return typeof v === 'string';
    case 'duration':
      return typeof v === 'string' || (typeof v === 'number' && v >= 0);
    case 'stringList':
      return Array.isArray(v) && v.every((x) => typeof x === 'string');
    case 'list':
      return Array.isArray(v);
    case 'stringMap':
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'any':
      return true;
  }
}

/** A value as the warning shows it: short, YAML-like. */
export function showValue(v: unknown): string {
  if (typeof v === 'string') return v === '' ? '""' : v;
  return JSON.stringify(v) ?? String(v);
}

export interface ReadOptions {
  /** Where each upstream field's value came from when not from the document's file (a flag's spelling). */
  sources?: Map<string, string>;
  /**
   * Flags over kubelet-ts's own format: only the given fields, taken as given (no TypeMeta, no
   * upstream defaults for fields not given, a zero value is that value).
   */
  literal?: boolean;
}

/**
 * Translates `doc` (a parsed KubeletConfiguration) into kubelet-ts fields. `source` names it in
 * messages (the file). Collects every problem rather than stopping at the first.
 */
export function readKubeletConfiguration(doc: Record<string, unknown>, source: string, options: ReadOptions = {}): KubeletConfigurationRead {
  const out: KubeletConfigurationRead = { input: {}, origins: new Map(), ignored: [], errors: [] };
  const sourceOf = (field: string) => options.sources?.get(field) ?? source;
  const fail = (field: string, value: unknown, allowed: string) => out.errors.push(`${sourceOf(field)}: ${field} is ${JSON.stringify(value)}; allowed: ${allowed}`);

  if (!options.literal) {
    if (doc.apiVersion !== KUBELET_CONFIGURATION_API_VERSION) fail('apiVersion', doc.apiVersion, KUBELET_CONFIGURATION_API_VERSION);
    if (doc.kind !== KUBELET_CONFIGURATION_KIND) fail('kind', doc.kind, KUBELET_CONFIGURATION_KIND);
  }

  const walk = (node: Record<string, unknown>, prefix: string) => {
    for (const [key, value] of Object.entries(node)) {
      const field = prefix ? `${prefix}.${key}` : key;
      if (!prefix && (key === 'apiVersion' || key === 'kind')) continue;
      const spec = UPSTREAM_FIELDS[field];
      if (!spec) {
        const hint = prefix ? undefined : kubeletTsOnlyHint(key);
        const suggestion = unknownNameHint(key, childNames(prefix), prefix ? `${prefix}.` : '');
        out.errors.push(`${sourceOf(field)}: ${hint ?? `unknown field '${field}'${suggestion}: KubeletConfiguration (${KUBELET_CONFIGURATION_API_VERSION}) has no such field`}`);
        continue;
      }
      if (value === undefined || value === null) continue;
      if (spec.implemented === 'struct') {
        if (typeof value !== 'object' || Array.isArray(value)) fail(field, value, 'an object');
        else walk(value as Record<string, unknown>, field);
        continue;
      }
      if (spec.implemented === false) {
        if (!spec.honoured(value)) out.ignored.push({ name: field, value, needs: spec.needs });
        continue;
      }
      const target = spec.to === undefined ? field : spec.to;
      const wrong = typeOk(spec.type, value) ? spec.check?.(value) : ((target === field && schemaAllowed(field)) || TYPE_WORDS[spec.type]);
      if (wrong !== undefined) {
        fail(field, value, wrong);
        continue;
      }
      if (target === null) continue;
      if (spec.zeroIsDefault && !options.literal && isZero(value)) continue; // upstream's default: filled below
      const converted = spec.convert ? spec.convert(value, doc) : value;
      if (converted === undefined) continue;
      setPath(out.input, target, converted);
      out.origins.set(target, field);
    }
  };
  walk(doc, '');

  if (!options.literal) {
    // Upstream's defaults where kubelet-ts's own differ, for what the document leaves unset.
    for (const [field, spec] of Object.entries(UPSTREAM_FIELDS)) {
      if (spec.implemented !== true || !spec.upstreamDefault) continue;
      const target = spec.to ?? field;
      if (getPath(out.input, target) !== undefined) continue;
      const given = getPath(doc, field);
      if (given !== undefined && given !== null && !(spec.zeroIsDefault && isZero(given))) continue;
      setPath(out.input, target, spec.upstreamDefault(doc));
    }
  }
  return out;
}
