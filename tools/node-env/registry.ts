import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, noLog, pidAlive, run, spawnDaemon, waitFor, type LineLog } from './util.ts';

/**
 * A real Docker/OCI registry (`docker-registry` from the Debian package of that name)
 * listening on loopback only, with its storage in a directory of ours.
 */

/** Options for {@link startRegistry}. */
export interface RegistryOptions {
  /** Directory for the config, the storage and the log. */
  dir: string;
  /** Port on 127.0.0.1. Default: a free port. */
  port?: number;
  /** htpasswd file: when given, the registry requires basic auth (for pull-secret tests). */
  htpasswdPath?: string;
  log?: LineLog;
}

/** A running registry. */
export interface Registry {
  /** `127.0.0.1:PORT`: the prefix of image references in this registry. */
  host: string;
  port: number;
  /** Storage directory. */
  storageDir: string;
  /** Log file of the registry process. */
  logPath: string;
  pid: number | undefined;
  /** Copies a Docker-archive tarball into this registry as `ref` (`host/name:tag`); `creds` is `user:password`. */
  pushImage(tarPath: string, ref: string, creds?: string): Promise<void>;
  /** Stops the registry (SIGTERM, then SIGKILL after 5 s). Idempotent. */
  stop(): Promise<void>;
}

/** Starts `docker-registry serve` on 127.0.0.1 and waits until `GET /v2/` answers. */
export async function startRegistry(opts: RegistryOptions): Promise<Registry> {
  const log = opts.log ?? noLog;
  const port = opts.port ?? (await freePort());
  const host = `127.0.0.1:${port}`;
  const storageDir = join(opts.dir, 'storage');
  const configPath = join(opts.dir, 'config.yml');
  const logPath = join(opts.dir, 'registry.log');
  const pidPath = join(opts.dir, 'registry.pid');
  await mkdir(storageDir, { recursive: true });
  await stopStaleRegistry(opts.dir, log);
  const auth = opts.htpasswdPath
    ? `auth:\n  htpasswd:\n    realm: kubelet-ts\n    path: ${JSON.stringify(opts.htpasswdPath)}\n`
    : '';
  await writeFile(
    configPath,
    [
      'version: 0.1',
      'log:',
      '  level: warn',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${JSON.stringify(storageDir)}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: ${host}`,
      auth,
    ].join('\n'),
  );

  const daemon = await spawnDaemon('docker-registry', ['serve', configPath], logPath, pidPath);
  const stop = () => daemon.stop();

  try {
    await waitFor(
      `registry on ${host} (log: ${logPath})`,
      async () => {
        const exit = daemon.exitInfo();
        if (exit !== undefined) throw new Error(`docker-registry exited (${exit}); see ${logPath}`);
        const res = await fetch(`http://${host}/v2/`, { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        // 401 means up with auth enabled.
        return res.status === 200 || res.status === 401;
      },
      15_000,
      50,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  log(`registry: listening on ${host} (pid ${daemon.pid}, storage ${storageDir})`);

  return {
    host,
    port,
    storageDir,
    logPath,
    pid: daemon.pid,
    async pushImage(tarPath: string, ref: string, creds?: string): Promise<void> {
      await pushImage(tarPath, ref, creds);
      log(`registry: pushed ${ref}`);
    },
    stop,
  };
}

/**
 * Copies a Docker-archive tarball into a registry with skopeo (`docker://` over plain
 * HTTP). `creds` is `user:password` for a registry with auth.
 */
export async function pushImage(tarPath: string, ref: string, creds?: string): Promise<void> {
  const args = ['copy', '--quiet', '--dest-tls-verify=false', '--insecure-policy'];
  if (creds) args.push('--dest-creds', creds);
  args.push(`docker-archive:${tarPath}`, `docker://${ref}`);
  // skopeo looks up registries.conf and a policy; --insecure-policy avoids needing /etc/containers/policy.json.
  await run('skopeo', args, { timeoutMs: 60_000 });
}

/** Stops a registry left running in `dir` by a run that died (its pid file). */
export async function stopStaleRegistry(dir: string, log: LineLog = noLog): Promise<void> {
  const pidPath = join(dir, 'registry.pid');
  const pid = Number((await readFile(pidPath, 'utf8').catch(() => '')).trim());
  if (pid > 0 && pidAlive(pid)) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.split('\0').includes(join(dir, 'config.yml'))) {
      log(`registry: stopping stale instance pid ${pid}`);
      process.kill(pid, 'SIGKILL');
      for (let i = 0; i < 40 && pidAlive(pid); i++) await sleep(50);
    }
  }
  await rm(pidPath, { force: true });
}
