/**
 * Field errors in the API server's wording (k8s.io/apimachinery/pkg/util/validation/field):
 * `path: Required value`, `path: Invalid value: "v": why`, `path: Unsupported value: "v":
 * supported values: "A", "B"`, ... A manifest is hostile input, so what is quoted from it is
 * bounded: a value or map key longer than a name is cut, characters outside printable ASCII
 * are escaped, and at most {@link MAX_REPORTED} problems are listed.
 */

/** Problems listed per object; the rest are counted. */
export const MAX_REPORTED = 50;
/** Characters of a quoted value or map key kept in a message. */
const MAX_QUOTED = 64;

/** A value as a message shows it: strings quoted (and cut), numbers as written, collections by kind. */
export function showValue(v: unknown): string {
  if (typeof v === 'string') {
    const cut = v.length > MAX_QUOTED ? `${v.slice(0, MAX_QUOTED)}...` : v;
    return `${JSON.stringify(cut).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}${v.length > MAX_QUOTED ? ` (${v.length} characters)` : ''}`;
  }
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v === null || v === undefined) return 'null';
  return Array.isArray(v) ? 'a list' : 'an object';
}

/** The kind of a JSON value, for "expected X, got Y". */
export function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'object') return 'map';
  return typeof v;
}

/** `path.name`, `path[3]`, `path[key]`: upstream's field path notation (keys cut and escaped). */
export const child = (path: string, name: string) => (path === '' ? name : `${path}.${name}`);
export const index = (path: string, i: number) => `${path}[${i}]`;
export function key(path: string, k: string): string {
  const cut = k.length > MAX_QUOTED ? `${k.slice(0, MAX_QUOTED)}...` : k;
  return `${path}[${cut.replace(/[^\x20-\x7e]/g, '?')}]`;
}

export class FieldErrors {
  private readonly list: string[] = [];
  private extra = 0;
  /**
   * Fields whose value has the wrong type. The API server would not have decoded such a value
   * at all, so it reports the type alone: a rule about the value adds nothing for these.
   */
  private readonly wrongType = new Set<string>();

  get count(): number {
    return this.list.length + this.extra;
  }

  add(path: string, detail: string): void {
    if (this.wrongType.has(path)) return;
    if (this.list.length >= MAX_REPORTED) this.extra++;
    else this.list.push(`${path}: ${detail}`);
  }

  /** A value of the wrong type (or out of its type's range); later rules skip the field. */
  typeError(path: string, detail: string): void {
    this.add(path, detail);
    this.wrongType.add(path);
  }

  /** `typeError` in the `Invalid value` form. */
  invalidType(path: string, value: unknown, detail: string): void {
    this.typeError(path, `Invalid value: ${showValue(value)}: ${detail}`);
  }

  required(path: string, detail?: string): void {
    this.add(path, detail ? `Required value: ${detail}` : 'Required value');
  }

  invalid(path: string, value: unknown, detail: string): void {
    this.add(path, `Invalid value: ${showValue(value)}: ${detail}`);
  }

  /** One `Invalid value` per message of a name check. */
  invalidEach(path: string, value: unknown, details: readonly string[]): void {
    for (const d of details) this.invalid(path, value, d);
  }

  unsupported(path: string, value: unknown, supported: readonly string[]): void {
    this.add(path, `Unsupported value: ${showValue(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`);
  }

  duplicate(path: string, value: unknown): void {
    this.add(path, `Duplicate value: ${showValue(value)}`);
  }

  notFound(path: string, value: unknown): void {
    this.add(path, `Not found: ${showValue(value)}`);
  }

  forbidden(path: string, detail: string): void {
    this.add(path, `Forbidden: ${detail}`);
  }

  tooLong(path: string, max: number): void {
    this.add(path, `Too long: may not be more than ${max} bytes`);
  }

  tooMany(path: string, actual: number, max: number): void {
    this.add(path, `Too many: ${actual}: must have at most ${max} items`);
  }

  /** The messages, with a last line counting those left out. */
  messages(): string[] {
    return this.extra > 0 ? [...this.list, `... and ${this.extra} more problems`] : [...this.list];
  }
}
