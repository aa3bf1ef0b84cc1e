/**
 * Reading a decoded object whose types are not to be trusted. The semantic rules run after the
 * structural check has named every value of the wrong type, so they look only at values of the
 * right type and skip the others: these accessors return undefined (or an empty list) for
 * anything else, and read own properties only, so that a key named `constructor` or
 * `__proto__` in a manifest is just a key, never something inherited from Object.prototype.
 */
export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `v` if it is a map/object, else undefined. */
export const obj = (v: unknown): Obj | undefined => (isObj(v) ? v : undefined);

/** The own property `k` of `o`, or undefined. */
export const get = (o: Obj | undefined, k: string): unknown => (o !== undefined && Object.hasOwn(o, k) ? o[k] : undefined);

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A list's items, or none for anything that is not a list. */
export const list = (v: unknown): readonly unknown[] => (Array.isArray(v) ? v : []);

export const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

export const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) ? v : undefined);

/** Present: neither absent nor null (Go's decoder reads null as an absent field). */
export const isSet = (v: unknown): boolean => v !== undefined && v !== null;

/** A string field that is set to something non-empty (the API's "specified"). */
export const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** The entries of a map whose values are strings (other values were reported by the type check). */
export function stringEntries(v: unknown): Array<[string, string]> {
  const o = obj(v);
  if (!o) return [];
  return Object.entries(o).filter((e): e is [string, string] => typeof e[1] === 'string');
}
