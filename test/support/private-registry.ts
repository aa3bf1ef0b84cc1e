import fs from 'node:fs/promises';
import path from 'node:path';
import { startRegistry, type NodeEnv, type Registry } from '../../tools/node-env/index.ts';
import { run, which } from '../../tools/node-env/util.ts';
import { realPartMissing } from './real-part.ts';

/**
 * A password-protected registry on loopback, beside the run's open one: Debian's
 * `docker-registry` with an `htpasswd` auth section and a bcrypt password file made by
 * `htpasswd -Bbn` (Debian's apache2-utils). docker-registry 2.8 serves basic auth over plain
 * HTTP (it does not insist on TLS), and containerd talks plain HTTP to 127.0.0.1 registries, so
 * no certificate is needed. It holds the busybox test image under the names a test asks for.
 */
export interface PrivateRegistry {
  /** `127.0.0.1:PORT`. */
  host: string;
  user: string;
  password: string;
  /** Full references of the pushed images, by the name asked for. */
  images: Record<string, string>;
  registry: Registry;
  stop(): Promise<void>;
}

/** Why the private registry cannot start here (no htpasswd), or undefined. */
export function privateRegistryUnavailableReason(): string | undefined {
  return which('htpasswd') ? undefined : 'htpasswd not found: install the Debian package apache2-utils (scripts/install-node-packages.sh --test)';
}

/** Skips the test (fails it with CI=true) when the private registry cannot start here. */
export function privateRegistryUsableOrSkip(ctx: Mocha.Context): void {
  const reason = privateRegistryUnavailableReason();
  if (reason) realPartMissing(ctx, 'the private registry cannot start', reason);
}

/** Starts the registry in `dir` with `user`/`password` and pushes the busybox image as each of `names` (`repo:tag`). */
export async function startPrivateRegistry(env: NodeEnv, dir: string, names: string[], user = 'puller', password = 'pull-s3cret'): Promise<PrivateRegistry> {
  await fs.mkdir(dir, { recursive: true });
  const htpasswdPath = path.join(dir, 'htpasswd');
  const { stdout } = await run('htpasswd', ['-Bbn', user, password], { timeoutMs: 20_000 });
  await fs.writeFile(htpasswdPath, stdout);
  const registry = await startRegistry({ dir, htpasswdPath });
  try {
    const images: Record<string, string> = {};
    for (const name of names) {
      images[name] = `${registry.host}/${name}`;
      await registry.pushImage(env.imageTarballs.busybox.tarPath, images[name]!, `${user}:${password}`);
    }
    return { host: registry.host, user, password, images, registry, stop: () => registry.stop() };
  } catch (err) {
    await registry.stop();
    throw err;
  }
}
