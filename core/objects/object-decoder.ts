/**
 * Decoding of Kubernetes objects read from files (static pod manifests, local ConfigMaps and
 * Secrets): YAML or JSON text in (./yaml-decoder.ts: YAML 1.1 scalars, the API server's size
 * and nesting limits, errors without the file's content), a plain object out with the fields
 * the v1 API does not know dropped, as upstream's non-strict decoder drops them.
 *
 * Which fields exist comes from @kubernetes/client-node's generated models (their
 * `attributeTypeMap`), not from a schema of our own. The models are loaded one file each, and
 * only the types reachable from the kinds this kubelet decodes (about 130 of 2,500): the
 * package's own `loadYaml` goes through its ObjectSerializer, whose import of every model costs
 * about 25 MiB of RSS for the life of the process. That loading is asynchronous, so
 * {@link loadObjectModels} runs once before the first decode; the decode itself is synchronous.
 * Validation (./validation/) checks each field's type against the same models.
 *
 * Unlike `loadYaml`, values stay JSON values: timestamps remain RFC 3339 strings (what the API
 * server sends and what the kubelet serves back), and a value of the wrong shape (a string
 * where a list belongs) is kept as it is for validation to name, not coerced.
 */
export { DocumentError, parseYamlDocument, parseYamlDocuments } from './yaml-decoder.ts';

/** One field of a generated model class. */
export interface ModelAttribute {
  name: string;
  baseName: string;
  /** 'string', 'number', 'boolean', 'Date', 'any', 'IntOrString', a model name, `Array<T>`, `{ [key: string]: T; }`. */
  type: string;
  /** 'int32', 'int64', 'date-time', 'byte', 'int-or-string' or ''. */
  format?: string;
}

/** The kinds decoded from files, by `kind`: the roots of the model closure. */
export const DECODED_KINDS = { Pod: 'V1Pod', ConfigMap: 'V1ConfigMap', Secret: 'V1Secret' } as const;
export type DecodedKind = keyof typeof DECODED_KINDS;

const MODELS_DIR = '@kubernetes/client-node/dist/gen/models/';
/** `Array<T>` and `{ [key: string]: T; }` in a model's type names: the element type. */
export const ARRAY_TYPE = /^Array<(.+)>$/;
export const MAP_TYPE = /^\{ \[key: string\]: (.+); \}$/;

/** Model name → its attributes; `null` for a type name with no model file (e.g. IntOrString). */
const models = new Map<string, readonly ModelAttribute[] | null>();
let loading: Promise<void> | undefined;

/** A model name, or undefined for a primitive / free-form type ('string', 'Date', 'any', ...). */
function modelName(type: string): string | undefined {
  const inner = ARRAY_TYPE.exec(type)?.[1] ?? MAP_TYPE.exec(type)?.[1] ?? type;
  if (inner !== type) return modelName(inner);
  return /^[A-Z]/.test(type) && type !== 'Date' ? type : undefined;
}

async function loadModel(type: string): Promise<string[]> {
  if (models.has(type)) return [];
  models.set(type, null);
  let mod: Record<string, { attributeTypeMap?: ModelAttribute[] }>;
  try {
    mod = (await import(`${MODELS_DIR}${type}.js`)) as typeof mod;
  } catch {
    return []; // not a model (IntOrString is a plain string-or-number): kept as it is
  }
  const attrs = mod[type]?.attributeTypeMap ?? [];
  models.set(type, attrs);
  return attrs.map((a) => modelName(a.type)).filter((t): t is string => t !== undefined && !models.has(t));
}

/**
 * Loads the models reachable from every kind in {@link DECODED_KINDS}, breadth first with each
 * level in parallel (about 130 small modules, ~30 ms). Idempotent; concurrent callers share
 * one load.
 */
export function loadObjectModels(): Promise<void> {
  loading ??= (async () => {
    let level: string[] = Object.values(DECODED_KINDS);
    while (level.length > 0) {
      const next = await Promise.all([...new Set(level)].map(loadModel));
      level = next.flat();
    }
    // A deep import into the package: an upgrade that moves the models must fail loudly here,
    // not decode pods without dropping anything.
    for (const root of Object.values(DECODED_KINDS)) {
      if (!models.get(root)) throw new Error(`cannot load ${MODELS_DIR}${root}.js: has @kubernetes/client-node's layout changed?`);
    }
  })();
  return loading;
}

/** `data` with only the fields the model `type` knows, recursively. */
function prune(data: unknown, type: string): unknown {
  if (data === null || data === undefined) return data;
  const arrayOf = ARRAY_TYPE.exec(type)?.[1];
  if (arrayOf !== undefined) return Array.isArray(data) ? data.map((v) => prune(v, arrayOf)) : data;
  const mapOf = MAP_TYPE.exec(type)?.[1];
  if (mapOf !== undefined) {
    if (typeof data !== 'object' || Array.isArray(data)) return data;
    return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, prune(v, mapOf)]));
  }
  const attrs = models.get(type);
  if (!attrs || typeof data !== 'object' || Array.isArray(data)) return data;
  const src = data as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const a of attrs) {
    const v = src[a.baseName];
    if (v !== undefined) out[a.name] = prune(v, a.type);
  }
  return out;
}

/**
 * The attributes of a loaded model, or undefined for a name that is not a model (IntOrString,
 * a primitive) or a model outside the decoded kinds' closure.
 */
export function modelAttributes(type: string): readonly ModelAttribute[] | undefined {
  return models.get(type) ?? undefined;
}

/**
 * Drops the fields the v1 API does not know from an object of a decoded kind. An object of
 * another kind, or not an object at all, comes back as it is (the caller names the problem).
 * Throws if {@link loadObjectModels} has not finished: a decode that silently kept unknown
 * fields would change pod UIDs between runs.
 */
export function dropUnknownFields<T = unknown>(obj: unknown): T {
  if (!loading || !models.get(DECODED_KINDS.Pod)) throw new Error('object models are not loaded: await loadObjectModels() first');
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return obj as T;
  const kind = (obj as { kind?: unknown }).kind;
  const model = typeof kind === 'string' && Object.hasOwn(DECODED_KINDS, kind) ? DECODED_KINDS[kind as DecodedKind] : undefined;
  return (model ? prune(obj, model) : obj) as T;
}
