import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
import { RUNS_COMPILED } from './package-root.ts';

/** The package's public modules, as a config or plugin imports them. */
const SELF_SPECIFIERS = ['kubelet-ts', 'kubelet-ts/testing'];

let selfReferenceRegistered = false;

/**
 * Makes `import ... from 'kubelet-ts'` work in a config file or plugin outside the package
 * (`/etc/kubelet-ts/kubelet.config.mts`, a plugin in its own directory). Node resolves a bare
 * specifier from the importing file's directory upwards, where no kubelet-ts is installed; the
 * package itself resolves its own name (package self-reference through "exports"), in the
 * sources and in dist/ alike. A resolve hook answers with that resolution, and only when Node
 * found nothing: a kubelet-ts a plugin installed next to itself is still the one it gets.
 * Registered only once an import needs it: Node runs resolve hooks on a thread of their own,
 * about 12 MiB of RSS the compiled kubelet would otherwise not have.
 */
function registerSelfReference(): void {
  if (selfReferenceRegistered) return;
  selfReferenceRegistered = true;
  const self: Record<string, string> = {};
  for (const specifier of SELF_SPECIFIERS) {
    try {
      self[specifier] = import.meta.resolve(specifier);
    } catch {
      // Not exported by this build: nothing to map.
    }
  }
  const hook = `const SELF = ${JSON.stringify(self)};
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND' && Object.hasOwn(SELF, specifier)) return { url: SELF[specifier], shortCircuit: true };
    throw err;
  }
}`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
}

/**
 * Imports a config file or plugin module by path. From the sources the kubelet runs under tsx,
 * so TypeScript imports like anything else. The compiled build (dist/) has no TypeScript loader
 * registered; for a TypeScript file it loads tsx's on demand, scoped to that import (it costs
 * about 20 MiB of RSS, so only operators with a .ts config or plugin pay it).
 */
export async function importModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  try {
    return await load(url);
  } catch (err) {
    if (!missesSelf(err)) throw err;
    registerSelfReference();
    // A module record of its own: the loader keeps the failed one failed.
    return load(`${url}?kubelet-ts-self-reference`);
  }
}

/** TypeScript files: always through tsx, never Node's own type stripping (see load). */
const TYPESCRIPT_FILE = /\.[cm]?ts$/;

async function load(url: string): Promise<Record<string, unknown>> {
  // Compiled, Node 22.18+ and 24 would strip the types themselves, but only erasable syntax and
  // only with explicit extensions, and resolve 'kubelet-ts' as plain Node does: a config or
  // plugin that loads under tsx would fail there. So the compiled build takes tsx for
  // TypeScript whatever the Node version. From the sources tsx is the process's loader already,
  // and a plain import keeps one instance of each module (tsImport namespaces what it loads: a
  // plugin would get its own copy of the SDK: its classes and module state would not be the core's).
  if (RUNS_COMPILED && TYPESCRIPT_FILE.test(new URL(url).pathname)) {
    const { tsImport } = await import('tsx/esm/api');
    return (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  }
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
    const { tsImport } = await import('tsx/esm/api');
    return (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  }
}

/** The import failed because 'kubelet-ts' (or a subpath) could not be found from where the file is. */
function missesSelf(err: unknown): boolean {
  const e = err as NodeJS.ErrnoException | undefined;
  return !selfReferenceRegistered && e?.code === 'ERR_MODULE_NOT_FOUND' && /(package|module) '(kubelet-ts)(\/[^']*)?'/.test(e.message ?? '');
}
