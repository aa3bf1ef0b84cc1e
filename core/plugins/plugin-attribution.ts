/**
 * Whose code threw: for an error nothing caught (core/cli.ts ends the kubelet on one), the
 * plugin whose files its stack runs through, so the log line says which plugin has the bug.
 * A plugin's files are under its root: `plugins/<name>/` for a built-in, its package's
 * directory for an npm module, its folder or file for a path. Inline plugins (objects in the
 * config) have no files of their own and are never named.
 */
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { isPluginError } from '../errors.ts';

/** A loaded plugin's name and where its code lives. */
export interface PluginRoot { name: string; root: string | undefined }

/** The file of each frame of a V8 stack trace, top first (file:// URLs as paths). */
export function stackFiles(stack: string): string[] {
  const out: string[] = [];
  for (const line of stack.split('\n')) {
    // "    at fn (/a/b.ts:1:2)", "    at /a/b.ts:1:2", "    at async fn (file:///a/b.ts:1:2)"
    const m = /^\s+at (?:.*?\()?((?:file:\/\/)?\/[^():]+?)(?::\d+){1,2}\)?\s*$/.exec(line);
    if (!m) continue;
    let file = m[1]!;
    if (file.startsWith('file://')) {
      try {
        file = fileURLToPath(file);
      } catch {
        continue;
      }
    }
    out.push(file);
  }
  return out;
}

/**
 * The plugin an error belongs to: the one a PluginError names, else the first (innermost)
 * frame of its stack under a plugin's root. Undefined when neither says.
 */
export function pluginOfError(err: unknown, plugins: readonly PluginRoot[]): string | undefined {
  if (isPluginError(err)) return err.plugin;
  const stack = (err as { stack?: unknown } | undefined)?.stack;
  if (typeof stack !== 'string') return undefined;
  const rooted = plugins.filter((p): p is { name: string; root: string } => !!p.root);
  for (const file of stackFiles(stack)) {
    // The deepest root wins: a vendor's package inside another plugin's folder is its own.
    const owner = rooted
      .filter((p) => file === p.root || file.startsWith(p.root.endsWith(path.sep) ? p.root : p.root + path.sep))
      .sort((a, b) => b.root.length - a.root.length)[0];
    if (owner) return owner.name;
  }
  return undefined;
}
