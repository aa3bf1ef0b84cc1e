/**
 * Resource names and quantities (upstream ValidateResourceRequirements,
 * validateContainerResourceName, ValidateResourceQuantityValue): container requests and limits,
 * pod overhead, emptyDir size limits, downward API divisors.
 */
import { QUANTITY_SYNTAX_ERROR, quantityValue } from '../quantity.ts';
import { FieldErrors, child, key } from './field-errors.ts';
import { isQualifiedName } from './names.ts';
import { get, list, obj } from './values.ts';

/** Resources a container may name without a domain (upstream IsStandardContainerResourceName). */
const STANDARD_CONTAINER_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage']);
const HUGEPAGES_PREFIX = 'hugepages-';

/**
 * The largest value the kubelet computes with exactly: CPU in millicores, everything else in
 * base units, as JavaScript numbers (integers are exact up to 2^53 - 1).
 */
const MAX_EXACT = Number.MAX_SAFE_INTEGER;

const isNative = (name: string) => !name.includes('/') || name.includes('kubernetes.io/');
const isHugePages = (name: string) => name.startsWith(HUGEPAGES_PREFIX);

/**
 * A quantity's value, with an error for a malformed, negative or too large one. `name` is the
 * resource it measures ('cpu' counts in millicores), if known. Undefined when it is invalid.
 */
export function validateQuantity(v: unknown, path: string, errs: FieldErrors, name = ''): number | undefined {
  if (typeof v !== 'string' && typeof v !== 'number') return undefined; // the type check named it
  const value = quantityValue(v);
  if (value === undefined) {
    errs.invalid(path, v, typeof v === 'number' ? 'must be a finite number' : QUANTITY_SYNTAX_ERROR);
    return undefined;
  }
  if (value < 0) {
    errs.invalid(path, v, 'must be greater than or equal to 0');
    return undefined;
  }
  const scaled = name === 'cpu' ? value * 1000 : value;
  if (scaled > MAX_EXACT) {
    errs.invalid(path, v, `must be no more than ${MAX_EXACT}${name === 'cpu' ? 'm' : ''}: a larger quantity cannot be represented exactly`);
    return undefined;
  }
  return value;
}

/** A resource name of a container's requests or limits (or pod overhead). */
function validateContainerResourceName(name: string, path: string, errs: FieldErrors): void {
  const msgs = isQualifiedName(name);
  errs.invalidEach(path, name, msgs);
  if (msgs.length > 0) return;
  if (!name.includes('/')) {
    if (!STANDARD_CONTAINER_RESOURCES.has(name) && !isHugePages(name)) errs.invalid(path, name, 'must be a standard resource for containers');
  } else if (!isNative(name) && (name.startsWith('requests.') || isQualifiedName(`requests.${name}`).length > 0)) {
    errs.invalid(path, name, "doesn't follow extended resource name standard");
  }
}

/** A map of resource name to quantity; returns the valid values by name. */
export function validateResourceList(v: unknown, path: string, errs: FieldErrors): Map<string, number> {
  const out = new Map<string, number>();
  const m = obj(v);
  if (!m) return out;
  for (const [name, q] of Object.entries(m)) {
    const at = key(path, name);
    validateContainerResourceName(name, at, errs);
    const value = validateQuantity(q, at, errs, name);
    if (value === undefined) continue;
    // Extended resources are counted in whole units.
    if (!isNative(name) && !Number.isInteger(value)) {
      errs.invalid(at, q, 'must be an integer');
      continue;
    }
    out.set(name, value);
  }
  return out;
}

/** A container's `resources`: requests and limits, each request at most its limit. */
export function validateResourceRequirements(v: unknown, path: string, errs: FieldErrors): void {
  const r = obj(v);
  if (!r) return;
  const limits = validateResourceList(get(r, 'limits'), child(path, 'limits'), errs);
  const requests = validateResourceList(get(r, 'requests'), child(path, 'requests'), errs);
  const rawLimits = obj(get(r, 'limits'));
  for (const [name, request] of requests) {
    const limit = limits.get(name);
    if (limit === undefined) continue;
    const shown = String(get(rawLimits, name));
    if (isHugePages(name) || !isNative(name)) {
      if (request !== limit) errs.invalid(key(child(path, 'requests'), name), get(obj(get(r, 'requests')), name), `must be equal to ${name} limit of ${shown}`);
    } else if (request > limit) {
      errs.invalid(key(child(path, 'requests'), name), get(obj(get(r, 'requests')), name), `must be less than or equal to ${name} limit of ${shown}`);
    }
  }
  if (list(get(r, 'claims')).length > 0) {
    errs.forbidden(child(path, 'claims'), 'static pods may not use ResourceClaims');
  }
}
