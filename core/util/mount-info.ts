// The mount table's text format (proc(5)), parsed: a pure module, so the hook types can name a
// table's entries without importing the volume code that reads it.

/** One line of /proc/self/mountinfo (proc(5)): the fields the volume code needs. */
export interface MountInfo { id: number; parent: number; root: string; mountPoint: string; fsType: string; source: string; options: string }

/** mountinfo escapes space, tab, newline and backslash as octal (`\040`). */
function unescapeField(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Parses mountinfo text (exported for tests). */
export function parseMountInfo(text: string): MountInfo[] {
  const out: MountInfo[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const f = line.split(' ');
    const sep = f.indexOf('-', 6);
    if (sep < 0) continue;
    out.push({ id: Number(f[0]), parent: Number(f[1]), root: unescapeField(f[3]!), mountPoint: unescapeField(f[4]!), options: f[5]!, fsType: f[sep + 1]!, source: unescapeField(f[sep + 2] ?? '') });
  }
  return out;
}
