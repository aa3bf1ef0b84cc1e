import { PluginError } from '../errors.ts';

/** What the order needs of a plugin: its name, the slots it fills, what it requires (slots, or plugin names). */
export interface Orderable { name: string; provides: readonly string[]; requires: readonly string[] }

/**
 * The order plugins are applied in: every plugin after the providers of what it requires, and
 * otherwise in config order (deterministic: the same config gives the same order). A
 * requirement is a capability slot (`network`), satisfied by the plugin that provides it, or
 * a plugin's name. Throws a PluginError naming a requirement nobody provides, or a cycle.
 */
export function orderPlugins<T extends Orderable>(plugins: readonly T[]): T[] {
  const providers = (req: string) => plugins.filter((p) => p.name === req || p.provides.includes(req));
  for (const p of plugins) {
    for (const req of p.requires) {
      if (providers(req).length === 0) {
        throw new PluginError(p.name, `requires '${req}', which no configured plugin provides: add a plugin that provides '${req}' to plugins`, { code: 'NotFound', hostCode: 'PLUGIN_REQUIREMENT_MISSING' });
      }
    }
  }
  const placed: T[] = [];
  const done = new Set<T>();
  while (placed.length < plugins.length) {
    const next = plugins.find((p) => !done.has(p) && p.requires.every((req) => providers(req).every((q) => q === p || done.has(q))));
    if (!next) {
      const cycle = cycleOf(plugins.filter((p) => !done.has(p)), providers);
      throw new PluginError(cycle[0]!, `plugins require each other in a cycle: ${cycle.join(' → ')}`, { code: 'InvalidInput', hostCode: 'PLUGIN_CYCLE' });
    }
    placed.push(next);
    done.add(next);
  }
  return placed;
}

/** One cycle among plugins that cannot be placed, as names, the first repeated at the end. */
function cycleOf<T extends Orderable>(left: readonly T[], providers: (req: string) => T[]): string[] {
  const path: T[] = [];
  let at: T | undefined = left[0];
  while (at && !path.includes(at)) {
    path.push(at);
    const cur: T = at;
    at = cur.requires.flatMap((req) => providers(req)).find((q) => q !== cur && left.includes(q));
  }
  if (!at) return path.map((p) => p.name);
  return [...path.slice(path.indexOf(at)), at].map((p) => p.name);
}
