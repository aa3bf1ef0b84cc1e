/**
 * The host version range a plugin declares (`kubeletTs: '^0.1'`), checked at load. npm's range
 * grammar for what plugin manifests write: `*`, `x`/`X` wildcards, partial versions (`1`,
 * `1.2`), comparators (`>=1.2.0 <2`), caret and tilde (`^0.1`, `~0.1.3`), hyphen ranges
 * (`1.0 - 2.0`) and `||`. Pre-release tags are not part of the host's versions and refused.
 */

type Version = [number, number, number];
type Comparator = { op: '<' | '<=' | '>' | '>=' | '='; v: Version };

const PART = '(0|[1-9]\\d*|x|X|\\*)';
const PARTIAL = new RegExp(`^v?${PART}(?:\\.${PART}(?:\\.${PART})?)?$`);

/** A version or partial version: numbers, and how many leading parts are given (wildcards end it). */
function partial(text: string): { nums: number[]; given: number } | undefined {
  const m = PARTIAL.exec(text);
  if (!m) return undefined;
  const nums: number[] = [];
  for (const p of m.slice(1)) {
    if (p === undefined || p === 'x' || p === 'X' || p === '*') break;
    nums.push(Number(p));
  }
  return { nums, given: nums.length };
}

const pad = (nums: number[]): Version => [nums[0] ?? 0, nums[1] ?? 0, nums[2] ?? 0];

/** The version just above every version matching the partial (`1.2` → `<1.3.0`). */
function upper(nums: number[]): Version {
  if (nums.length === 0) return [Infinity, 0, 0];
  const up = [...nums];
  up[up.length - 1]! += 1;
  return pad(up);
}

function comparators(term: string): Comparator[] | undefined {
  const t = term.trim();
  if (t === '' || t === '*' || t === 'x' || t === 'X') return [];
  const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(t);
  if (hyphen) {
    const lo = partial(hyphen[1]!);
    const hi = partial(hyphen[2]!);
    if (!lo || !hi) return undefined;
    return [{ op: '>=', v: pad(lo.nums) }, hi.given === 3 ? { op: '<=', v: pad(hi.nums) } : { op: '<', v: upper(hi.nums) }];
  }
  const out: Comparator[] = [];
  for (const word of t.split(/\s+/)) {
    const m = /^(\^|~|>=|<=|>|<|=)?(.+)$/.exec(word)!;
    const op = m[1] ?? '';
    const p = partial(m[2]!);
    if (!p) return undefined;
    const { nums, given } = p;
    if (op === '^') {
      // Changes that do not modify the left-most non-zero part.
      const [a = 0, b = 0] = nums;
      const top: Version = given === 0 ? [Infinity, 0, 0] : a > 0 || given === 1 ? [a + 1, 0, 0] : b > 0 || given === 2 ? [0, b + 1, 0] : [0, 0, (nums[2] ?? 0) + 1];
      out.push({ op: '>=', v: pad(nums) }, { op: '<', v: top });
    } else if (op === '~') {
      out.push({ op: '>=', v: pad(nums) }, { op: '<', v: upper(nums.slice(0, Math.max(1, Math.min(given, 2)))) });
    } else if (op === '' || op === '=') {
      if (given === 3) out.push({ op: '=', v: pad(nums) });
      else out.push({ op: '>=', v: pad(nums) }, { op: '<', v: upper(nums) });
    } else if (op === '>' && given < 3) out.push({ op: '>=', v: upper(nums) });
    else if (op === '<=' && given < 3) out.push({ op: '<', v: upper(nums) });
    else out.push({ op: op as Comparator['op'], v: pad(nums) });
  }
  return out;
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i]! !== b[i]!) return a[i]! < b[i]! ? -1 : 1;
  return 0;
}

function holds(c: Comparator, v: Version): boolean {
  const d = compare(v, c.v);
  switch (c.op) {
    case '<': return d < 0;
    case '<=': return d <= 0;
    case '>': return d > 0;
    case '>=': return d >= 0;
    default: return d === 0;
  }
}

/** Whether `version` (x.y.z) is in `range`; throws on a range that does not parse, saying so. */
export function satisfies(version: string, range: string): boolean {
  const v = partial(version);
  if (!v || v.given !== 3) throw new Error(`"${version}" is not a version (x.y.z)`);
  const sets = range.split('||').map(comparators);
  if (sets.some((s) => s === undefined)) throw new Error(`"${range}" is not a version range (e.g. '^0.1', '>=0.1.0 <1')`);
  return sets.some((set) => set!.every((c) => holds(c, pad(v.nums))));
}
