import path from 'node:path';
import { readConfigFile, structuredCloneConfig } from './config-file.ts';
import { PATH_FIELDS } from './field-paths.ts';
import { isKubeletConfiguration } from './kubelet-configuration.ts';
import { upstreamTopLevelNames } from './upstream-fields.ts';
import { KUBELET_FLAGS } from './upstream-flags.ts';

/**
 * kubelet-ts's own file next to a KubeletConfiguration (--plugins-config): `plugins` and the
 * fields upstream has no place for. A field of upstream's there is refused naming where it
 * belongs, so that every setting has one home.
 */
export async function readPluginsConfig(file: string, configFile: string): Promise<{ input: Record<string, unknown>; errors: string[] }> {
  const raw = structuredCloneConfig(await readConfigFile(file)) as Record<string, unknown>;
  if (isKubeletConfiguration(raw)) {
    return { input: {}, errors: [`${file}: a KubeletConfiguration; --plugins-config takes kubelet-ts's own format (plugins: [...]): give the KubeletConfiguration as --config`] };
  }
  const upstream = upstreamTopLevelNames();
  const errors: string[] = [];
  for (const key of Object.keys(raw)) {
    if (!upstream.has(key)) continue;
    const flag = Object.entries(KUBELET_FLAGS).find(([, spec]) => spec.field === key)?.[0];
    errors.push(`${file}: ${key} is a KubeletConfiguration field: set it in ${configFile} (the --config file)${flag ? ` or by --${flag}` : ''}`);
    delete raw[key];
  }
  for (const key of Object.keys(raw)) {
    const v = raw[key];
    if (PATH_FIELDS.has(key) && typeof v === 'string' && v !== '') raw[key] = path.resolve(path.dirname(file), v);
  }
  return { input: raw, errors };
}

/** The plugin name an entry names: `'name'`, `['name', {options}]` or an inline `{ name }`. */
export function pluginEntryName(entry: unknown): string | undefined {
  const ref = Array.isArray(entry) ? entry[0] : entry;
  if (typeof ref === 'string') return ref;
  const name = ref && typeof ref === 'object' ? (ref as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? name : undefined;
}

/**
 * What the start should say when a --plugins-config file leaves out plugins of the default
 * bundle: its `plugins` replace the bundle's (they are not added to it), so a file listing
 * `[cri-containerd, my-plugin]` runs without probes, eviction, CSI ...; an operator who meant
 * to add one plugin learns it here instead of from pods whose probes never run.
 */
export function leftOutDefaultsNotice(file: string, plugins: unknown, defaults: unknown[], defaultsFile: string): string | undefined {
  const listed = new Set((Array.isArray(plugins) ? plugins : []).map(pluginEntryName));
  const leftOut = defaults.map(pluginEntryName).filter((name): name is string => name !== undefined && !listed.has(name));
  if (leftOut.length === 0) return undefined;
  return `${file}: its plugins replace the default bundle's (they are not added to it); left out, so not running: ${leftOut.join(', ')} (add those wanted to plugins in ${file}; the bundle: ${defaultsFile})`;
}
