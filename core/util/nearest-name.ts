/**
 * "Did you mean ...?" for names an operator typed: a flag, a config field. One suggestion, the
 * nearest by edit distance, and only when it is near enough to be a typo; never the whole list
 * of known names (a config has 70 fields, the upstream kubelet 150 flags).
 */

/** The known name nearest to `given`, when it is a few edits away or `given` is a prefix of it. */
export function nearestName(given: string, known: Iterable<string>): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const name of known) {
    const d = editDistance(given.toLowerCase(), name.toLowerCase());
    if (!best || d < best.d) best = { name, d };
  }
  if (!best) return undefined;
  const close = best.d <= Math.max(2, Math.floor(best.name.length / 4)) || (given.length >= 3 && best.name.toLowerCase().startsWith(given.toLowerCase()));
  return close ? best.name : undefined;
}

/** Levenshtein distance (insertions, deletions, substitutions). */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** At most this many known names are listed when none is near: a short list helps, a long one buries the line. */
const SHORT_LIST = 6;

/**
 * What to add after "unknown field 'x'": the known names when there are only a few (an object
 * of 2 to 6 fields, a resource or signal map), else the nearest name (`prefix` + name), else
 * nothing.
 */
export function unknownNameHint(given: string, known: readonly string[], prefix = ''): string {
  if (known.length > 0 && known.length <= SHORT_LIST) return ` (allowed fields: ${known.join(', ')})`;
  const near = nearestName(given, known);
  return near === undefined ? '' : ` (did you mean '${prefix}${near}'?)`;
}
