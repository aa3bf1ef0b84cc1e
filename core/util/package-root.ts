import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's own directory: the default config bundle and built-in plugins live here. For
 * the compiled build (`npm run build`) that is dist/, which holds them compiled.
 */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** True when this module runs compiled (dist/), not as TypeScript through tsx. */
export const RUNS_COMPILED = import.meta.url.endsWith('.js');
