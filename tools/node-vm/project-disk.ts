import { realpathSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../node-env/util.ts';

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The project as the node runs it, on a disk of its own (ext4 labelled `kubelet-ts`, mounted
 * read-only at /opt/kubelet-ts by the image's fstab): what `npm pack` ships (the compiled
 * dist/, bin/), unpacked, with the checkout's node_modules beside it. The guest has no npm
 * registry, and loading node_modules from its own disk is ~10x faster than over a 9p share
 * (../shared/NODE-ENV.md); the compiled build starts without a TypeScript loader, which matters
 * when Node.js runs 10-30x slower than on the host.
 */
export async function buildProjectDisk(dir: string): Promise<{ img: string; seconds: number }> {
  const t0 = performance.now();
  const stage = join(dir, 'project');
  await rm(stage, { recursive: true, force: true });
  await mkdir(stage, { recursive: true });
  // prepack compiles dist/ (scripts/build.mjs).
  const packed = await run('npm', ['pack', '--silent', '--pack-destination', stage], { cwd: PROJECT_ROOT, timeoutMs: 300_000 });
  const tarball = packed.stdout.trim().split('\n').pop()!;
  await run('tar', ['-xzf', join(stage, tarball), '-C', stage, '--strip-components=1']);
  await rm(join(stage, tarball));
  // The runtime dependencies: the checkout's node_modules (a symlink in a worktree: copy what it points to).
  const modules = realpathSync(join(PROJECT_ROOT, 'node_modules'));
  await run('cp', ['-a', `${modules}/.`, join(stage, 'node_modules')], { timeoutMs: 120_000 });
  if (!(await readdir(join(stage, 'dist'))).includes('core')) throw new Error(`node VM project disk: npm pack gave no dist/core in ${stage}`);
  const img = join(dir, 'project.img');
  await run('mkfs.ext4', ['-q', '-F', '-L', 'kubelet-ts', '-d', stage, img, '1G'], { timeoutMs: 120_000 });
  await rm(stage, { recursive: true, force: true });
  return { img, seconds: (performance.now() - t0) / 1000 };
}
