/**
 * The relative links of the project's markdown, checked as GitHub resolves them: the target file
 * exists (from the linking file's directory) and a `#anchor` is a heading of the target file.
 * test/unit/docs-links.test.ts runs it over README.md, docs/ and the plugins' READMEs, so a
 * section moved to another file cannot leave a link behind.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';

/** The anchor GitHub gives a heading: lowercase, punctuation but '-' and '_' dropped, spaces to '-'. */
export function githubAnchor(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text only
    .replace(/<[^>]+>/g, '') // inline HTML
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** Lines outside fenced code blocks, with their line numbers (1-based). */
function proseLines(markdown: string): { line: string; n: number }[] {
  const out: { line: string; n: number }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((line, i) => {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (f) {
      if (fence === undefined) fence = f[1]![0]!;
      else if (f[1]![0] === fence) fence = undefined;
      return;
    }
    if (fence === undefined) out.push({ line, n: i + 1 });
  });
  return out;
}

/** Every anchor a markdown file has: its headings' (a repeated one gets -1, -2, ...) and explicit ids. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(markdown)) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = githubAnchor(h[1]!);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const m of line.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(m[1]!);
  }
  return anchors;
}

export interface Link {
  target: string;
  line: number;
}

/** The link targets of a markdown file, outside code blocks and inline code. */
export function linksOf(markdown: string): Link[] {
  const links: Link[] = [];
  const lines = proseLines(markdown);
  // A link's text may wrap over lines; its `](target)` is on one line, which is all this reads.
  for (const { line, n } of lines) {
    const prose = line.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length));
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: m[1]!, line: n });
    const ref = /^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(\s|$)/.exec(prose);
    if (ref) links.push({ target: ref[1]!, line: n });
  }
  return links;
}

/**
 * The broken relative links of one markdown file (`file` relative to `root`, `text` its
 * content), each as `file:line: link: why`. A link to another markdown file's anchor is checked
 * against that file's headings; an anchor into another kind of file (a line of code) is not.
 */
export function brokenLinks(root: string, file: string, text: string): string[] {
  const broken: string[] = [];
  for (const { target, line } of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // absolute: not ours to check
    const hash = target.indexOf('#');
    const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
    const fragment = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const at = `${file}:${line}: ${target}`;
    if (path.startsWith('/')) {
      broken.push(`${at}: a path from the site's root, which GitHub resolves outside the repository`);
      continue;
    }
    const resolved = path === '' ? file : posix.normalize(posix.join(posix.dirname(file), path));
    if (resolved.startsWith('../')) {
      broken.push(`${at}: outside the repository`);
      continue;
    }
    if (path !== '' && !existsSync(join(root, resolved))) {
      broken.push(`${at}: no file ${resolved}`);
      continue;
    }
    if (fragment === undefined || fragment === '' || !resolved.endsWith('.md')) continue;
    if (path !== '' && statSync(join(root, resolved)).isDirectory()) continue;
    const targetText = path === '' ? text : readFileSync(join(root, resolved), 'utf8');
    if (!anchorsOf(targetText).has(fragment.toLowerCase())) broken.push(`${at}: no heading #${fragment} in ${resolved}`);
  }
  return broken;
}

/** The markdown a reader finds on GitHub: the README, docs/ and each plugin's and example's README. */
export function projectMarkdown(root: string): string[] {
  const files = ['README.md'];
  const walk = (dir: string): void => {
    if (!existsSync(join(root, dir))) return;
    for (const name of readdirSorted(join(root, dir))) {
      const rel = `${dir}/${name}`;
      if (statSync(join(root, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.md')) files.push(rel);
    }
  };
  walk('docs');
  for (const group of ['plugins', 'examples']) {
    if (!existsSync(join(root, group))) continue;
    for (const name of readdirSorted(join(root, group))) {
      if (existsSync(join(root, group, name, 'README.md'))) files.push(`${group}/${name}/README.md`);
    }
  }
  return files;
}

/** Sorted, so failures come in a stable order. */
function readdirSorted(dir: string): string[] {
  return readdirSync(dir).sort();
}
