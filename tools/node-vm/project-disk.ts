import { realpathSync } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../node-env/util.ts';

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where the guest finds the Node.js of the project disk (mounted at /opt/kubelet-ts). */
export const GUEST_NODE = '/opt/kubelet-ts/node/bin/node';

/**
 * The project as the node runs it, on a disk of its own (ext4 labelled `kubelet-ts`, mounted
 * read-only at /opt/kubelet-ts by the image's fstab): what `npm pack` ships (the compiled
 * dist/, bin/), unpacked, with the checkout's node_modules beside it. The guest has no npm
 * registry, and loading node_modules from its own disk is ~10x faster than over a 9p share
 * (../shared/NODE-ENV.md); the compiled build starts without a TypeScript loader, which matters
 * when Node.js runs 10-30x slower than on the host.
 *
 * The Node.js that runs the tests goes with it, at node/bin/node (GUEST_NODE): Node 24 LTS as
 * scripts/install-node.sh installs it for a node. Debian trixie's own nodejs is Node 20, below
 * the package's `engines` and without `--disable-sigusr1`, the flag that keeps a pod with
 * hostPID from opening the kubelet's inspector; the official build needs only glibc and
 * libstdc++, which the image has.
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
  await mkdir(join(stage, 'node', 'bin'), { recursive: true });
  await copyFile(process.execPath, join(stage, 'node', 'bin', 'node'));
  await chmod(join(stage, 'node', 'bin', 'node'), 0o755);
  if (!(await readdir(join(stage, 'dist'))).includes('core')) throw new Error(`node VM project disk: npm pack gave no dist/core in ${stage}`);
  const img = join(dir, 'project.img');
  await run('mkfs.ext4', ['-q', '-F', '-L', 'kubelet-ts', '-d', stage, img, '1G'], { timeoutMs: 120_000 });
  await rm(stage, { recursive: true, force: true });
  return { img, seconds: (performance.now() - t0) / 1000 };
}
