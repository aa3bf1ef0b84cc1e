/**
 * The generic type check: a decoded object against the types @kubernetes/client-node's
 * generated models declare for every field (`attributeTypeMap`), the way the API server's
 * typed JSON decoding refuses a number where a string belongs. It covers every field of the
 * kinds the kubelet decodes without a rule per field; the semantic rules
 * (./pod-validation.ts) then only check values of the right type.
 *
 * Types: 'string', 'number' (with format int32 or int64: an integer in range), 'boolean',
 * 'Date' (an RFC 3339 date-time string), 'IntOrString', `Array<T>`, `{ [key: string]: T; }`,
 * model names and 'any'. A quantity (resources, sizeLimit, divisor) may be a number: YAML's
 * `cpu: 1` is a quantity. null is an absent field, as Go's decoder reads it; a null list item
 * or map value is refused (Go would read its zero value; nothing legitimate writes one).
 */
import { ARRAY_TYPE, MAP_TYPE, modelAttributes } from '../object-decoder.ts';
import { FieldErrors, child, index, key, kindOf } from './field-errors.ts';

/** Fields of type string (or map of strings) that hold resource quantities. */
const QUANTITY_FIELDS = new Set([
  'V1ResourceRequirements.limits',
  'V1ResourceRequirements.requests',
  'V1VolumeResourceRequirements.limits',
  'V1VolumeResourceRequirements.requests',
  'V1PodSpec.overhead',
  'V1ContainerStatus.allocatedResources',
  'V1EmptyDirVolumeSource.sizeLimit',
  'V1ResourceFieldSelector.divisor',
]);

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** RFC 3339 as Go's time.RFC3339 parses it (metav1.Time). */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function isRfc3339(s: string): boolean {
  const m = RFC3339.exec(s);
  if (!m) return false;
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || se > 59) return false;
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  return d >= 1 && d <= days;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Model recursion in a value deeper than any v1 object: a cyclic value, never a manifest. */
const MAX_LEVELS = 128;

/**
 * Checks `value` against the model `type` (for example 'V1Pod'), adding a
 * `path: expected X, got Y` (or `Invalid value`) error per field of the wrong type. The models
 * must be loaded (loadObjectModels); a type whose model is not loaded is not checked. Fields
 * the model does not know are not looked at (the decoder drops them).
 */
export function checkTypes(value: unknown, type: string, path: string, errs: FieldErrors): void {
  walk(value, type, path, errs, false, '', 0);
}

function walk(v: unknown, type: string, path: string, errs: FieldErrors, quantity: boolean, format: string, level: number): void {
  if (v === null || v === undefined) return;
  if (level > MAX_LEVELS) return void errs.typeError(path, `nesting is deeper than ${MAX_LEVELS} levels`);
  const expected = (what: string) => errs.typeError(path === '' ? '<root>' : path, `expected ${what}, got ${kindOf(v)}`);

  const arrayOf = ARRAY_TYPE.exec(type)?.[1];
  if (arrayOf !== undefined) {
    if (!Array.isArray(v)) return expected('list');
    v.forEach((item, i) => {
      if (item === null || item === undefined) errs.typeError(index(path, i), `expected ${describe(arrayOf, quantity)}, got null`);
      else walk(item, arrayOf, index(path, i), errs, quantity, format, level + 1);
    });
    return;
  }
  const mapOf = MAP_TYPE.exec(type)?.[1];
  if (mapOf !== undefined) {
    if (!isPlainObject(v)) return expected('map');
    for (const [k, item] of Object.entries(v)) {
      if (item === null || item === undefined) errs.typeError(key(path, k), `expected ${describe(mapOf, quantity)}, got null`);
      else walk(item, mapOf, key(path, k), errs, quantity, format, level + 1);
    }
    return;
  }
  switch (type) {
    case 'string':
      if (quantity && typeof v === 'number') return checkNumber(v, path, errs, '');
      if (typeof v !== 'string') return expected(quantity ? 'quantity (string or number)' : 'string');
      if (format === 'byte' && !(v.length % 4 === 0 && BASE64.test(v))) errs.invalidType(path, v, 'must be base64 encoded');
      return;
    case 'number':
      if (typeof v !== 'number') return expected(format === 'int32' || format === 'int64' ? 'integer' : 'number');
      return checkNumber(v, path, errs, format);
    case 'boolean':
      if (typeof v !== 'boolean') expected('boolean');
      return;
    case 'Date':
      if (typeof v !== 'string') return expected('RFC 3339 date-time string');
      if (!isRfc3339(v)) errs.invalidType(path, v, 'must be an RFC 3339 date-time such as 2006-01-02T15:04:05Z');
      return;
    case 'IntOrString':
      if (typeof v === 'number') return checkNumber(v, path, errs, 'int32');
      if (typeof v !== 'string') expected('integer or string');
      return;
    case 'any':
    case 'object':
      return;
  }
  const attrs = modelAttributes(type);
  if (attrs === undefined) return; // not a model of the decoded kinds: nothing to check against
  if (!isPlainObject(v)) return expected('object');
  for (const a of attrs) {
    if (!Object.hasOwn(v, a.baseName)) continue;
    walk(v[a.baseName], a.type, child(path, a.baseName), errs, QUANTITY_FIELDS.has(`${type}.${a.baseName}`), a.format ?? '', level + 1);
  }
}

function describe(type: string, quantity: boolean): string {
  if (quantity) return 'quantity (string or number)';
  if (ARRAY_TYPE.test(type)) return 'list';
  if (MAP_TYPE.test(type)) return 'map';
  if (/^[A-Z]/.test(type) && type !== 'Date' && type !== 'IntOrString') return 'object';
  return type === 'IntOrString' ? 'integer or string' : type;
}

/**
 * A number: finite, and for int32/int64 an integer in range. JavaScript numbers hold integers
 * exactly up to 2^53 - 1; a larger int64 would silently become another number, so it is refused.
 */
function checkNumber(v: number, path: string, errs: FieldErrors, format: string): void {
  if (!Number.isFinite(v)) return errs.invalidType(path, v, 'must be a finite number');
  if (format !== 'int32' && format !== 'int64') return;
  if (!Number.isInteger(v)) return errs.invalidType(path, v, 'must be an integer');
  if (format === 'int32' && (v < INT32_MIN || v > INT32_MAX)) return errs.invalidType(path, v, `must be a 32-bit integer (between ${INT32_MIN} and ${INT32_MAX})`);
  if (!Number.isSafeInteger(v)) {
    errs.invalidType(path, v, `must be between ${Number.MIN_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}: a larger integer cannot be represented exactly`);
  }
}


/**
 * The type problems of a decoded object of one of the decoded kinds ('V1Pod', 'V1ConfigMap',
 * 'V1Secret'), each `path: reason`: for callers that read ConfigMaps and Secrets from files,
 * where a YAML 1.1 `yes` in `data` is a boolean, not the text a volume file needs.
 */
export function typeProblems(value: unknown, model: string): string[] {
  const errs = new FieldErrors();
  checkTypes(value, model, '', errs);
  return errs.messages();
}
