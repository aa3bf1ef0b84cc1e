import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { confFiles } from '../cni/config.ts';

const SHIM_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'shim');

/** Which shim implementation to install. */
export type ShimKind = 'perl' | 'node';

/** `perl` when /usr/bin/perl (the shim's `#!`) with IO::Socket::UNIX runs here (~20 ms to start), else `node` (~100 ms to start). */
export function detectShim(): ShimKind {
  const r = spawnSync('/usr/bin/perl', ['-MIO::Socket::UNIX', '-e', '1'], { stdio: 'ignore', timeout: 5000 });
  return r.status === 0 ? 'perl' : 'node';
}

/** The shim's source, ready to install: the Node version gets this Node's absolute path in its `#!` line. */
export function shimSource(kind: ShimKind): string {
  if (kind === 'perl') return fs.readFileSync(path.join(SHIM_DIR, 'cni-exec-shim.pl'), 'utf8');
  const src = fs.readFileSync(path.join(SHIM_DIR, 'cni-exec-shim.mjs'), 'utf8');
  return src.replace(/^#!.*\n/, `#!${process.execPath}\n`);
}

/** Writes `content` to `file` atomically (temp file + rename), only when it differs; returns true if written. */
export function writeIfChanged(file: string, content: string, mode: number): boolean {
  try {
    if (fs.readFileSync(file, 'utf8') === content && (fs.statSync(file).mode & 0o777) === mode) return false;
  } catch {
    // absent
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, content, { mode });
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
  return true;
}

/** What the delegate network config says. */
export interface DelegateConf {
  /** Network name the runtime sees. */
  name: string;
  /** The shim's executable name (its `type`). */
  type: string;
  socket: string;
  timeoutSeconds: number;
}

/** The one-plugin network config the runtime runs: the shim, told where the kubelet listens. */
export function delegateConflist(d: DelegateConf): string {
  return JSON.stringify({ cniVersion: '1.0.0', name: d.name, plugins: [{ type: d.type, socket: d.socket, timeoutSeconds: d.timeoutSeconds }] }, null, 2) + '\n';
}

/** True if a config file's text is a delegate config (its plugin is the shim): the chain loader skips it. */
export function isDelegateConf(text: string, shimType: string): boolean {
  try {
    const obj = JSON.parse(text) as { type?: unknown; plugins?: Array<{ type?: unknown }> };
    return obj.type === shimType || (Array.isArray(obj.plugins) && obj.plugins.some((p) => p?.type === shimType));
  } catch {
    return false;
  }
}

/**
 * Installs the delegate: the shim into the runtime's CNI bin dir and the delegate config
 * into its conf dir. Fails when another config file sorts before ours, because a runtime
 * (containerd `max_conf_num = 1`) runs only the first and would bypass the kubelet.
 */
export async function installDelegate(o: { runtimeConfDir: string; runtimeBinDir: string; confFile: string; shim: ShimKind; conf: DelegateConf }): Promise<{ shimPath: string; confPath: string }> {
  const shimPath = path.join(o.runtimeBinDir, o.conf.type);
  writeIfChanged(shimPath, shimSource(o.shim), 0o755);
  const confPath = path.join(o.runtimeConfDir, o.confFile);
  writeIfChanged(confPath, delegateConflist(o.conf), 0o644);
  const first = (await confFiles(o.runtimeConfDir))[0];
  if (first && first !== confPath) {
    throw new Error(`${first} sorts before ${confPath}: the runtime would run that network instead of the kubelet's; rename it, or set the option runtimeConfFile to a name that sorts first`);
  }
  return { shimPath, confPath };
}
