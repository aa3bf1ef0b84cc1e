/**
 * The YAML schema Kubernetes reads manifests with: YAML 1.1 scalars as go-yaml v2 resolves
 * them (sigs.k8s.io/yaml, which the API server, kubectl and the kubelet's file source use to
 * turn YAML into JSON), for js-yaml. js-yaml's own default schema is YAML 1.2, where `0400`
 * is the decimal 400 and `yes` a string; Kubernetes reads them as 256 and `true`.
 *
 * What go-yaml v2 does with a plain (unquoted) scalar, and so what this schema does:
 *  - the exact words `~`, `null`, `Null`, `NULL` and the empty scalar are null;
 *  - `y Y yes Yes YES true True TRUE on On ON` are true, `n N no No NO false False FALSE off
 *    Off OFF` are false;
 *  - `.inf`, `-.inf`, `.nan` (and their capitalisations) are the special floats;
 *  - a scalar starting with a digit or sign, underscores removed, is an integer when Go's
 *    `strconv.ParseInt(s, 0, 64)` (then `ParseUint`) accepts it: decimal, `0x` hex, `0o` or
 *    leading-zero octal, `0b` binary; else a float when it matches
 *    `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` and is finite (an overflow such as
 *    `1e400` stays a string);
 *  - a scalar starting with `.` is a float when Go's ParseFloat accepts it;
 *  - everything else (timestamps included: go-yaml hands them to JSON as the text) is a string.
 * Sexagesimal numbers (`1:20`) are YAML 1.1 but not go-yaml v2: they stay strings, so a port
 * mapping such as `22:22` reads as Kubernetes reads it.
 *
 * Explicit tags: `!!str`, `!!int`, `!!float`, `!!bool`, `!!null` as above (a value the tag
 * cannot hold is an error, as in go-yaml); `!!binary` is base64 decoded into a string;
 * `!!timestamp` is the text; merge keys (`<<`) merge. Any other tag (`!!python/object`,
 * `!custom`, `!!set`) is ignored, as go-yaml ignores it: the node is read as if untagged
 * (scalars as strings).
 */
import yaml from 'js-yaml';

const TAG = 'tag:yaml.org,2002:';

const NULLS = new Set(['', '~', 'null', 'Null', 'NULL']);
const TRUES = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);
const FALSES = new Set(['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']);
const SPECIAL_FLOATS = new Map<string, number>([
  ...['.nan', '.NaN', '.NAN'].map((s) => [s, NaN] as const),
  ...['.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF'].map((s) => [s, Infinity] as const),
  ...['-.inf', '-.Inf', '-.INF'].map((s) => [s, -Infinity] as const),
]);

/** Go's ParseInt(s, 0, 64) / ParseUint(s, 0, 64) syntax (base prefixes, a leading 0 is octal). */
const GO_INT = /^([-+]?)(?:0[xX]([0-9a-fA-F]+)|0[oO]([0-7]+)|0[bB]([01]+)|(0[0-7]*)|([1-9][0-9]*))$/;
/** go-yaml v2's yamlStyleFloat. */
const GO_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
/** What Go's ParseFloat accepts for a scalar starting with '.' (decimal forms only). */
const GO_DOT_FLOAT = /^\.[0-9]+([eE][-+]?[0-9]+)?$/;

const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** The integer go-yaml reads from `s` (underscores already removed), or undefined. */
function goInt(s: string): number | undefined {
  const m = GO_INT.exec(s);
  if (!m) return undefined;
  const [, sign, hex, oct, bin, leadingZero, dec] = m;
  let v: bigint;
  if (hex !== undefined) v = BigInt(`0x${hex}`);
  else if (oct !== undefined) v = BigInt(`0o${oct}`);
  else if (bin !== undefined) v = BigInt(`0b${bin}`);
  else if (leadingZero !== undefined) v = leadingZero.length > 1 ? BigInt(`0o${leadingZero.slice(1)}`) : 0n;
  else v = BigInt(dec!);
  if (sign === '-') v = -v;
  // ParseInt fails beyond int64, ParseUint takes the positive rest up to uint64.
  if (v > UINT64_MAX || v < -INT64_MAX - 1n) return undefined;
  return Number(v);
}

/** The value go-yaml v2 resolves a plain scalar to. */
export function resolvePlainScalar(s: string): unknown {
  if (NULLS.has(s)) return null;
  if (TRUES.has(s)) return true;
  if (FALSES.has(s)) return false;
  const special = SPECIAL_FLOATS.get(s);
  if (special !== undefined) return special;
  const first = s.charAt(0);
  if (first === '.') return GO_DOT_FLOAT.test(s) ? finiteOr(Number(s), s) : s;
  if (!/[-+0-9]/.test(first)) return s;
  const plain = s.replaceAll('_', '');
  const int = goInt(plain);
  if (int !== undefined) return int;
  if (GO_FLOAT.test(plain)) return finiteOr(Number(plain), s);
  return s;
}

/** ParseFloat reports an overflow as an error, and go-yaml then keeps the text. */
function finiteOr(n: number, text: string): number | string {
  return Number.isFinite(n) ? n : text;
}

const isNull = (s: string) => NULLS.has(s);
const isBool = (s: string) => TRUES.has(s) || FALSES.has(s);
const isNumber = (s: string) => typeof resolvePlainScalar(s) === 'number';

/** One js-yaml type per YAML 1.1 scalar tag, each resolving only what go-yaml gives that tag. */
const nullType = new yaml.Type(`${TAG}null`, { kind: 'scalar', resolve: (d: string | null) => d === null || isNull(d), construct: () => null });
const boolType = new yaml.Type(`${TAG}bool`, { kind: 'scalar', resolve: (d: string | null) => d !== null && isBool(d), construct: (d: string) => TRUES.has(d) });
const intType = new yaml.Type(`${TAG}int`, {
  kind: 'scalar',
  resolve: (d: string | null) => d !== null && Number.isInteger(resolvePlainScalar(d)),
  construct: (d: string) => resolvePlainScalar(d),
});
const floatType = new yaml.Type(`${TAG}float`, {
  kind: 'scalar',
  resolve: (d: string | null) => d !== null && isNumber(d),
  construct: (d: string) => resolvePlainScalar(d),
});

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** go-yaml decodes `!!binary` with Go's strict StdEncoding (line breaks ignored) into a string. */
const binaryType = new yaml.Type(`${TAG}binary`, {
  kind: 'scalar',
  resolve: (d: string | null) => {
    const s = (d ?? '').replace(/[\r\n]/g, '');
    return s.length % 4 === 0 && BASE64.test(s);
  },
  construct: (d: string | null) => Buffer.from((d ?? '').replace(/[\r\n]/g, ''), 'base64').toString('utf8'),
});
/** `<<` as a key merges the mapping(s) it names (the loader acts on this tag). */
const mergeType = new yaml.Type(`${TAG}merge`, { kind: 'scalar', resolve: (d: string | null) => d === '<<' });

/** go-yaml hands a timestamp to JSON as its text. */
const timestampType = new yaml.Type(`${TAG}timestamp`, { kind: 'scalar', construct: (d: string | null) => d ?? '' });

/**
 * Any other tag, for each node kind: js-yaml tries "multi" types by tag prefix, and the
 * empty prefix matches every tag. The node keeps what it is (scalars their text).
 */
const ignoredTags = (['scalar', 'sequence', 'mapping'] as const).map(
  (kind) => new yaml.Type('', { kind, multi: true, construct: (d: unknown) => (d === null && kind === 'scalar' ? '' : d) }),
);

/**
 * The schema: failsafe (str, seq, map) plus the YAML 1.1 scalars above as implicit types (tried
 * on plain scalars, most specific first, as go-yaml's resolve does), merge keys, and the
 * explicit-only tags.
 */
export const KUBERNETES_YAML_SCHEMA = yaml.FAILSAFE_SCHEMA.extend({
  implicit: [nullType, boolType, intType, floatType, mergeType],
  explicit: [binaryType, timestampType, ...ignoredTags],
});
