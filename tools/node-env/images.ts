import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run, noLog, type LineLog } from './util.ts';

/**
 * Builds Docker-archive image tarballs from the static busybox, without a Docker engine
 * or the internet. A tarball holds one layer (a root filesystem of `/bin/busybox`, its
 * applet symlinks and a minimal `/etc`), an image config and `manifest.json`, which is
 * what `skopeo copy docker-archive:...` and `ctr images import` read.
 */

/** What to build: a name, a tag and the process the image runs. */
export interface ImageSpec {
  /** Repository path without a registry, e.g. `kubelet-ts/busybox`. */
  repository: string;
  tag: string;
  cmd?: string[];
  entrypoint?: string[];
  env?: string[];
  workingDir?: string;
  /** The image config's `User` (`uid`, `uid:gid` or a name); unset: root, as the busybox image. */
  user?: string;
}

/** A tarball on disk and what it contains. */
export interface BuiltImage {
  spec: ImageSpec;
  /** `repository:tag`, without a registry. */
  name: string;
  /** Path of the Docker-archive tarball. */
  tarPath: string;
  /** `sha256:<hex>` of the image config (the image ID). */
  configDigest: string;
  /** `sha256:<hex>` of the uncompressed layer tar (the diff ID). */
  layerDigest: string;
}

/** Options for {@link buildImage}. */
export interface BuildOptions {
  /** Where built tarballs are cached, keyed by content. */
  cacheDir: string;
  /** The static busybox binary. Default `/bin/busybox` (Debian package busybox-static). */
  busyboxPath?: string;
  log?: LineLog;
}

/** Bump when the layout of the built images changes, to invalidate caches. */
const BUILDER_VERSION = 1;

const DEFAULT_PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The general-purpose test image: busybox with `sh` as its command. */
export const BUSYBOX_IMAGE: ImageSpec = {
  repository: 'kubelet-ts/busybox',
  tag: '1.35',
  cmd: ['sh'],
};

/**
 * The sandbox ("pause") image's script. PID 1 ignores signals it has no handler for, so
 * the trap is what makes SIGTERM/SIGINT end it promptly; `wait` returns as soon as a trapped
 * signal arrives, while a plain `sleep` in the foreground would delay the trap.
 */
export const PAUSE_SCRIPT = "trap 'kill $! 2>/dev/null; exit 0' TERM INT; while :; do sleep 86400 & wait $!; done";

/** The sandbox image containerd starts for every pod: stays alive until SIGTERM/SIGINT. */
export const PAUSE_IMAGE: ImageSpec = {
  repository: 'kubelet-ts/pause',
  tag: '1',
  entrypoint: ['/bin/sh', '-c', PAUSE_SCRIPT],
};

function goArch(): string {
  switch (process.arch) {
    case 'x64':
      return 'amd64';
    case 'arm64':
      return 'arm64';
    case 'arm':
      return 'arm';
    case 'ia32':
      return '386';
    default:
      return process.arch;
  }
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

const busyboxInfoCache = new Map<string, Promise<{ sha: string; applets: string[] }>>();

/** The busybox binary's digest and applet list (`busybox --list`), memoized per path. */
function busyboxInfo(path: string): Promise<{ sha: string; applets: string[] }> {
  let p = busyboxInfoCache.get(path);
  if (!p) {
    p = (async () => {
      const [sha, list] = await Promise.all([sha256File(path), run(path, ['--list'], { timeoutMs: 10_000 })]);
      const applets = list.stdout
        .split('\n')
        .map((s) => s.trim())
        .filter((s) => s && s !== 'busybox' && !s.includes('/'))
        .sort();
      return { sha, applets };
    })();
    busyboxInfoCache.set(path, p);
  }
  return p;
}

/** Writes the root filesystem of a busybox image into `dir`. */
async function writeRootfs(dir: string, busyboxPath: string, applets: string[]): Promise<void> {
  for (const d of ['bin', 'etc', 'root', 'home', 'proc', 'sys', 'dev', 'run', 'var', 'var/www', 'usr']) {
    await mkdir(join(dir, d), { recursive: true });
  }
  await mkdir(join(dir, 'tmp'));
  await chmod(join(dir, 'tmp'), 0o1777);
  await copyFile(busyboxPath, join(dir, 'bin/busybox'));
  await chmod(join(dir, 'bin/busybox'), 0o755);
  for (const applet of applets) await symlink('busybox', join(dir, 'bin', applet));
  // One directory for every binary: scripts that use /usr/bin/env or /sbin/ip still work.
  await symlink('bin', join(dir, 'sbin'));
  await symlink('../bin', join(dir, 'usr/bin'));
  await symlink('../bin', join(dir, 'usr/sbin'));
  await writeFile(
    join(dir, 'etc/passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n',
  );
  await writeFile(join(dir, 'etc/group'), 'root:x:0:\nnobody:x:65534:\n');
  await writeFile(join(dir, 'etc/hosts'), '');
  await writeFile(join(dir, 'etc/resolv.conf'), '');
  await writeFile(join(dir, 'etc/hostname'), '');
}

/**
 * Builds (or finds in the cache) a Docker-archive tarball for `spec`. The cache key covers
 * the busybox binary, its applets, the spec and the builder version, so a second call with
 * the same inputs returns at once with the same file.
 */
export async function buildImage(spec: ImageSpec, opts: BuildOptions): Promise<BuiltImage> {
  const log = opts.log ?? noLog;
  const busyboxPath = opts.busyboxPath ?? '/bin/busybox';
  const { sha: busyboxSha, applets } = await busyboxInfo(busyboxPath);
  const name = `${spec.repository}:${spec.tag}`;
  const key = createHash('sha256')
    .update(JSON.stringify({ v: BUILDER_VERSION, busyboxSha, applets, spec, arch: goArch() }))
    .digest('hex')
    .slice(0, 20);
  const base = `${spec.repository.replace(/[^a-zA-Z0-9.-]/g, '_')}_${spec.tag}-${key}`;
  const tarPath = join(opts.cacheDir, `${base}.tar`);
  const metaPath = join(opts.cacheDir, `${base}.json`);
  await mkdir(opts.cacheDir, { recursive: true });

  if ((await exists(tarPath)) && (await exists(metaPath))) {
    const meta = JSON.parse(await readFile(metaPath, 'utf8')) as { configDigest: string; layerDigest: string };
    log(`image ${name}: cached ${tarPath}`);
    return { spec, name, tarPath, configDigest: meta.configDigest, layerDigest: meta.layerDigest };
  }

  const started = Date.now();
  const work = await mkdtemp(join(opts.cacheDir, `.build-${base}-`));
  try {
    const rootfs = join(work, 'rootfs');
    const archive = join(work, 'archive');
    await mkdir(rootfs);
    await mkdir(archive);
    await writeRootfs(rootfs, busyboxPath, applets);

    // A reproducible layer: sorted entries, root ownership, epoch mtimes.
    const layerTmp = join(work, 'layer.tar');
    await run('tar', [
      '--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--format=posix',
      '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
      '-cf', layerTmp, '-C', rootfs, '.',
    ]);
    const layerHex = await sha256File(layerTmp);
    await mkdir(join(archive, layerHex));
    await rename(layerTmp, join(archive, layerHex, 'layer.tar'));

    const created = '1970-01-01T00:00:00Z';
    const imageConfig = {
      architecture: goArch(),
      os: 'linux',
      created,
      config: {
        Env: spec.env ?? [DEFAULT_PATH_ENV],
        ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
        ...(spec.cmd ? { Cmd: spec.cmd } : {}),
        WorkingDir: spec.workingDir ?? '/',
        ...(spec.user !== undefined ? { User: spec.user } : {}),
      },
      rootfs: { type: 'layers', diff_ids: [`sha256:${layerHex}`] },
      history: [{ created, created_by: 'kubelet-ts tools/node-env/images.ts (static busybox)' }],
    };
    const configJson = JSON.stringify(imageConfig);
    const configHex = createHash('sha256').update(configJson).digest('hex');
    await writeFile(join(archive, `${configHex}.json`), configJson);
    await writeFile(
      join(archive, 'manifest.json'),
      JSON.stringify([{ Config: `${configHex}.json`, RepoTags: [name], Layers: [`${layerHex}/layer.tar`] }]),
    );

    const outTmp = join(work, 'image.tar');
    await run('tar', [
      '--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0',
      '-cf', outTmp, '-C', archive, 'manifest.json', `${configHex}.json`, layerHex,
    ]);
    const meta = { configDigest: `sha256:${configHex}`, layerDigest: `sha256:${layerHex}` };
    await writeFile(join(work, 'meta.json'), JSON.stringify(meta));
    // Renames are atomic: a concurrent builder of the same key ends with the same files.
    await rename(join(work, 'meta.json'), metaPath);
    await rename(outTmp, tarPath);
    log(`image ${name}: built ${tarPath} in ${Date.now() - started} ms`);
    return { spec, name, tarPath, ...meta };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Builds the two images the node environment needs: busybox and the sandbox image. */
export async function buildTestImages(opts: BuildOptions): Promise<{ busybox: BuiltImage; pause: BuiltImage }> {
  const [busybox, pause] = await Promise.all([buildImage(BUSYBOX_IMAGE, opts), buildImage(PAUSE_IMAGE, opts)]);
  return { busybox, pause };
}
