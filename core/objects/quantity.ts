/**
 * Kubernetes resource quantities ("100m", "1.5", "128Mi", "1G", "1e3"). The kubelet
 * needs CPU in millicores and memory in bytes to build the runtime's resources.
 *
 * The grammar is upstream's (resource.ParseQuantity), with nothing around the number:
 *   <quantity> ::= <signedNumber><suffix>
 *   <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
 *   <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E | e<signed digits>
 * A YAML number (`cpu: 1`) is a quantity too.
 */
const SUFFIX: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
// No two quantifiers can match the same characters, so a long malformed string fails in
// linear time (a pattern like `\d+\.?\d*` backtracks quadratically).
const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/;

/** The API server's message for a string that is not a quantity. */
export const QUANTITY_SYNTAX_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/**
 * The value of a quantity in base units, or undefined when `q` is not one: a string outside
 * the grammar, a number that is not finite, any other type. Never throws. A quantity whose
 * value exceeds what a double holds is Infinity (the caller decides how large is too large).
 */
export function quantityValue(q: unknown): number | undefined {
  if (typeof q === 'number') return Number.isFinite(q) ? q : undefined;
  if (typeof q !== 'string') return undefined;
  const m = QUANTITY.exec(q);
  if (!m) return undefined;
  const base = Number(m[1]);
  if (m[2]) return base * 10 ** Number(m[2].slice(1));
  return base * SUFFIX[m[3] ?? '']!;
}

/** Parses a quantity to a plain number of base units; throws on malformed input. */
export function parseQuantity(q: string | number): number {
  const v = quantityValue(q);
  if (v === undefined) throw new Error(`invalid quantity ${typeof q === 'string' ? `'${q.length > 64 ? `${q.slice(0, 64)}...` : q}'` : `of type ${q === null ? 'null' : typeof q}`}`);
  return v;
}

/** CPU quantity → millicores, rounded up as upstream does. */
export function milliCPU(q: string | number): number {
  return Math.ceil(parseQuantity(q) * 1000 - 1e-9);
}

/** Memory quantity → bytes. */
export function bytes(q: string | number): number {
  return Math.ceil(parseQuantity(q) - 1e-9);
}

const BINARY_SUFFIXES = [['Ei', 2 ** 60], ['Pi', 2 ** 50], ['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 2 ** 10]] as const;

/**
 * A byte count as apimachinery prints a BinarySI quantity, for messages in upstream's words: the
 * largest binary suffix that divides it exactly ('100Mi', '87004Ki'), else the plain number.
 */
export function binaryQuantity(n: number): string {
  const v = Math.round(n);
  if (v === 0) return '0';
  for (const [suffix, size] of BINARY_SUFFIXES) {
    if (Math.abs(v) >= size && v % size === 0) return `${v / size}${suffix}`;
  }
  return String(v);
}

/** A byte count for people, one decimal in the largest binary unit it reaches ('58.2Mi', '1.5Gi', '512'). */
export function roundedBinaryQuantity(n: number): string {
  for (const [suffix, size] of BINARY_SUFFIXES) {
    if (Math.abs(n) >= size) return `${(n / size).toFixed(1)}${suffix}`;
  }
  return String(Math.round(n));
}
