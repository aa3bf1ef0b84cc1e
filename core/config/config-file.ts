/**
 * Reading one config file, whatever its format (cosmiconfig, module name `kubelet`): .ts,
 * .mts, .js, .mjs (the default export), .json, .yaml. What it holds is read elsewhere.
 */
import { cosmiconfig, type Loader } from 'cosmiconfig';
import { ConfigError, errorMessage } from '../errors.ts';
import { importModule } from '../util/import-module.ts';
import type { KubeletConfigInput } from './types.ts';

// cosmiconfig's own TypeScript loader compiles with the `typescript` package (a dev
// dependency); importModule loads .ts configs with the same resolution (and `kubelet-ts`
// package self-reference) as the rest of the program.
const importLoader: Loader = async (filepath) => {
  const mod = await importModule(filepath);
  // Without a default export, the module's named exports would be read as config fields.
  if (!('default' in mod)) throw new Error('the file has no default export (export default defineConfig({...}))');
  return mod.default;
};

/** Reads the config file (cosmiconfig, module name `kubelet`) and returns its raw object. */
export async function readConfigFile(file: string): Promise<KubeletConfigInput> {
  const explorer = cosmiconfig('kubelet', {
    loaders: { '.ts': importLoader, '.mts': importLoader, '.js': importLoader, '.mjs': importLoader },
  });
  let result;
  try {
    result = await explorer.load(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ConfigError(`${file}: config file not found`);
    throw new ConfigError(`${file}: cannot load config: ${errorMessage(err)}`);
  }
  const config = result?.config;
  if (config === undefined || config === null) return {};
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new ConfigError(`${file}: the config must be an object (export default defineConfig({...}))`);
  }
  return config as KubeletConfigInput;
}

/** Copies the config without breaking plugin objects or functions inside `plugins`. */
export function structuredCloneConfig(config: KubeletConfigInput): KubeletConfigInput {
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    copy[k] = k === 'plugins' || v === null || typeof v !== 'object' ? v : JSON.parse(JSON.stringify(v));
  }
  return copy as KubeletConfigInput;
}
