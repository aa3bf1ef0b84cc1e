import fs from 'node:fs/promises';
import path from 'node:path';
import { CniError } from './errors.ts';
import { CNI_ERR, type NetworkConfigList, type PluginConf } from './types.ts';

/** File name extensions libcni reads from a configuration directory. */
export const CONF_EXTENSIONS = ['.conf', '.conflist', '.json'];

const invalid = (msg: string, file?: string) =>
  new CniError({ code: CNI_ERR.INVALID_NETWORK_CONFIG, msg: file ? `${file}: ${msg}` : msg });

/**
 * Parses a network configuration: a list (`{cniVersion, name, plugins: [...]}`) or, for a
 * `.conf`/`.json` file, a single plugin's config (`{cniVersion, name, type, ...}`), which
 * becomes a list of one as libcni does. Every error names the file and the field.
 */
export function parseNetworkConfig(text: string, file = '(inline)'): NetworkConfigList {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw invalid(`not valid JSON: ${(err as Error).message}`, file);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw invalid('must be a JSON object', file);
  const obj = raw as Record<string, unknown>;
  if (typeof obj.name !== 'string' || !obj.name) throw invalid("'name' is missing or not a string", file);
  if (typeof obj.cniVersion !== 'string' || !/^\d+\.\d+\.\d+$/.test(obj.cniVersion)) {
    throw invalid(`'cniVersion' is ${JSON.stringify(obj.cniVersion)}; allowed: a version such as "1.0.0"`, file);
  }
  const isList = 'plugins' in obj || file.endsWith('.conflist');
  let plugins: unknown[];
  if (isList) {
    if (!Array.isArray(obj.plugins)) throw invalid(`network "${obj.name}": 'plugins' is ${JSON.stringify(obj.plugins)}; allowed: a non-empty array of plugin configs`, file);
    if (obj.plugins.length === 0) throw invalid(`network "${obj.name}": 'plugins' is empty`, file);
    plugins = obj.plugins;
  } else {
    const { cniVersion: _v, name: _n, ...plugin } = obj;
    plugins = [plugin];
  }
  const checked = plugins.map((p, i): PluginConf => {
    if (!p || typeof p !== 'object' || Array.isArray(p)) throw invalid(`network "${obj.name}": plugins[${i}] must be an object`, file);
    const type = (p as Record<string, unknown>).type;
    if (typeof type !== 'string' || !type) throw invalid(`network "${obj.name}": plugins[${i}].type is missing`, file);
    if (type.includes('/') || type === '.' || type === '..') throw invalid(`network "${obj.name}": plugins[${i}].type "${type}" must be a plain executable name`, file);
    return p as PluginConf;
  });
  return {
    cniVersion: obj.cniVersion,
    name: obj.name,
    ...(obj.disableCheck === true ? { disableCheck: true } : {}),
    plugins: checked,
    file,
  };
}

/** The configuration files of a directory, sorted by name (libcni's `ConfFiles`). */
export async function confFiles(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names.filter((n) => CONF_EXTENSIONS.includes(path.extname(n)) && !n.startsWith('.')).sort().map((n) => path.join(dir, n));
}

/**
 * Loads the network to run from `dir`: the first file by name (or the one whose network is
 * called `name`), skipping files `skip` rejects (the runtime delegate's own config, when the
 * two directories are one). A malformed first file is an error, not skipped: running the
 * second network instead of the one the operator meant would be worse than failing.
 */
export async function loadNetwork(dir: string, options: { name?: string; skip?: (file: string, text: string) => boolean } = {}): Promise<NetworkConfigList> {
  const files = await confFiles(dir);
  for (const file of files) {
    const text = await fs.readFile(file, 'utf8');
    if (options.skip?.(file, text)) continue;
    if (options.name !== undefined) {
      // Only a file that names the network is parsed strictly.
      let name: unknown;
      try {
        name = (JSON.parse(text) as { name?: unknown }).name;
      } catch {
        continue;
      }
      if (name !== options.name) continue;
    }
    return parseNetworkConfig(text, file);
  }
  const what = options.name !== undefined ? `no network named "${options.name}"` : 'no network config found';
  throw new CniError({ code: CNI_ERR.INVALID_NETWORK_CONFIG, msg: `${what} in ${dir} (files ending in ${CONF_EXTENSIONS.join(', ')})` });
}
