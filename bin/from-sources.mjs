// Runs kubelet-ts from its TypeScript sources, as the repository does (an installed package has
// only the compiled build): tsx compiles the .ts files, and every import resolves with the
// export condition `kubelet-ts-source`, under which package.json `exports` map `kubelet-ts`
// and `kubelet-ts/testing` to core/sdk/*.ts instead of the compiled dist/ that a vendor's
// install gets. Without it the sources would import the SDK from dist/: stale, or missing
// before the first build, and a second copy of the core's classes next to the sources' own.
// Processes started with node's `--conditions=kubelet-ts-source` (mocha, the bench scripts)
// need no hook; the executables, started as plain `node`, register this one.
import { register } from 'node:module';

export const SOURCE_CONDITION = 'kubelet-ts-source';

const HOOK = `const C = ${JSON.stringify(SOURCE_CONDITION)};
export async function resolve(specifier, context, next) {
  return next(specifier, context.conditions.includes(C) ? context : { ...context, conditions: [...context.conditions, C] });
}`;

/** Registers the source condition's resolve hook and tsx's loader, in this process. */
export async function registerSources() {
  register(`data:text/javascript,${encodeURIComponent(HOOK)}`);
  const tsx = await import('tsx/esm/api');
  tsx.register();
}
