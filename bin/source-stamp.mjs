// What the compiled build was made from: a hash over the path, size and modification time of
// every file it compiles or copies. scripts/build.mjs records it in dist/package.json;
// bin/kubelet-ts.mjs runs dist/ only while the sources still have the same stamp, so an edit,
// a new file, a deleted file or a checkout of an older version all fall back to the sources.
import { createHash } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The files and folders under the repository root that the build reads. */
export const BUILD_INPUTS = ['core', 'plugins', 'kubelet.config.ts', 'tsconfig.json', 'tsconfig.build.json'];

export function sourceStamp(root) {
  const lines = [];
  const visit = (p) => {
    let st;
    try {
      st = statSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) for (const name of readdirSync(p).sort()) visit(join(p, name));
    else lines.push(`${relative(root, p)}:${st.size}:${st.mtimeMs}`);
  };
  for (const p of BUILD_INPUTS) visit(join(root, p));
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}
