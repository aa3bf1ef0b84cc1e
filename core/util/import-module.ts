import { pathToFileURL } from 'node:url';

/**
 * Imports a config file or plugin module by path. From the sources the kubelet runs under tsx,
 * so TypeScript imports like anything else. The compiled build (dist/) has no TypeScript loader
 * registered; for a TypeScript file it loads tsx's on demand, scoped to that import (it costs
 * about 20 MiB of RSS, so only operators with a .ts config or plugin pay it).
 */
export async function importModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
    const { tsImport } = await import('tsx/esm/api');
    return (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  }
}
