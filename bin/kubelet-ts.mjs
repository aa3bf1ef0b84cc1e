#!/usr/bin/env -S node --disable-sigusr1 --max-semi-space-size=2 --heap-growing-percent=20
// The kubelet-ts command. Installed from npm, the package holds only the compiled build (dist/)
// and runs it. In the repository it runs dist/ (`npm run build`) when it exists and was built
// from the sources as they are now (bin/source-stamp.mjs): what a node should run (no
// TypeScript loader: about 20 MiB less RSS, faster start). Otherwise it runs the TypeScript
// sources through tsx (bin/from-sources.mjs), so there is no build step between an edit and a
// node. KUBELET_TS_FROM_SOURCE=1 forces the sources. The shebang's --max-semi-space-size=2
// caps V8's young generation (default up to 16 MiB per semi-space): about 20 MiB less RSS for
// no measurable CPU at a kubelet's allocation rate. --heap-growing-percent=20 lets the old
// generation grow 1.2× over what the last full collection kept, not up to 4×: a kubelet's live
// heap is ~25 MiB at 110 pods and it allocates slowly, so V8's own factor left 15–40 MiB of
// garbage resident between collections, more on a busy machine (bench/README.md).
// --disable-sigusr1: no inspector on SIGUSR1, which root in a hostPID + hostNetwork pod could send
// and then run code as the kubelet (core/process-lifecycle.ts, test/integration/hardening.test.ts).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sourceStamp } from './source-stamp.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
const SOURCES = join(ROOT, 'core', 'cli.ts');

/** dist/ is what to run: the package has no sources (installed from npm), or dist/ was built from the sources as they are now (same files, sizes and times). */
function runBuild() {
  if (!existsSync(SOURCES)) return true;
  if (process.env.KUBELET_TS_FROM_SOURCE === '1' || !existsSync(join(DIST, 'core', 'cli.js'))) return false;
  try {
    const built = JSON.parse(readFileSync(join(DIST, 'package.json'), 'utf8')).kubeletTsBuild;
    return built.sourceStamp === sourceStamp(ROOT);
  } catch {
    return false;
  }
}

if (runBuild()) {
  await import(pathToFileURL(join(DIST, 'core', 'cli.js')).href);
} else {
  const { registerSources } = await import('./from-sources.mjs');
  await registerSources();
  await import(pathToFileURL(SOURCES).href);
}
