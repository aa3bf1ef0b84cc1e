/**
 * The upstream CSI hostpath driver (`hostpathplugin`) and `csi-node-driver-registrar`, run as
 * real processes next to a test kubelet, as a node plugin DaemonSet would run them. The
 * binaries come gzip'd from ../shared/csi (see its README): they are unpacked into a per-run
 * directory and checked against its SHA256SUMS, never copied into the repository.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, openSync, closeSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';
import { realPartMissing } from './real-part.ts';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where the gzip'd binaries and SHA256SUMS are: `KUBELET_TS_CSI_DIR`, or ../shared/csi next to the repository. */
export const CSI_BINARIES_DIR = path.resolve(process.env.KUBELET_TS_CSI_DIR ?? path.join(REPO_ROOT, '..', 'shared', 'csi'));

const BINARIES = ['hostpathplugin', 'csi-node-driver-registrar'] as const;
type Binary = (typeof BINARIES)[number];

/** What is missing to run the real driver, or undefined when everything is there. */
export function realCsiDriverUnavailableReason(): string | undefined {
  const sums = path.join(CSI_BINARIES_DIR, 'SHA256SUMS');
  if (!existsSync(sums)) return `${sums} not found: the upstream CSI hostpath driver and node-driver-registrar are expected there (set KUBELET_TS_CSI_DIR to another directory)`;
  for (const b of BINARIES) {
    const gz = path.join(CSI_BINARIES_DIR, `${b}.gz`);
    if (!existsSync(gz)) return `${gz} not found (see ${path.join(CSI_BINARIES_DIR, 'README.md')})`;
  }
  return undefined;
}

/** As nodeEnvOrSkip: with `CI=true` missing binaries fail the test; elsewhere it is skipped saying what is missing. */
export function realCsiDriverOrSkip(ctx: Mocha.Context): void {
  const reason = realCsiDriverUnavailableReason();
  if (reason) realPartMissing(ctx, 'the real CSI driver cannot run', reason);
}

/** Unpacks both binaries into `dir` (mode 0755), each checked against SHA256SUMS while it is written. */
export async function unpackCsiBinaries(dir: string): Promise<Record<Binary, string>> {
  const sums = new Map<string, string>();
  for (const line of (await fs.readFile(path.join(CSI_BINARIES_DIR, 'SHA256SUMS'), 'utf8')).split('\n')) {
    const m = /^([0-9a-f]{64})\s+\*?(\S+)$/.exec(line.trim());
    if (m) sums.set(m[2]!, m[1]!);
  }
  await fs.mkdir(dir, { recursive: true });
  const out = {} as Record<Binary, string>;
  for (const b of BINARIES) {
    const want = sums.get(b);
    if (!want) throw new Error(`${b} has no line in ${path.join(CSI_BINARIES_DIR, 'SHA256SUMS')}`);
    const dest = path.join(dir, b);
    const hash = crypto.createHash('sha256');
    const tap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    await pipeline(createReadStream(path.join(CSI_BINARIES_DIR, `${b}.gz`)), createGunzip(), tap, createWriteStream(dest, { mode: 0o755 }));
    const got = hash.digest('hex');
    if (got !== want) {
      await fs.rm(dest, { force: true });
      throw new Error(`${b}: sha256 ${got} does not match SHA256SUMS (${want})`);
    }
    out[b] = dest;
  }
  return out;
}

export interface RealCsiDriverOptions {
  /** Where unpackCsiBinaries put the binaries. */
  binDir: string;
  /** The driver's own directory: its socket, its state dir and both processes' logs. */
  dir: string;
  /** The kubelet's `<rootDir>/plugins_registry`: the registrar makes `<driver>-reg.sock` there. */
  registryDir: string;
  nodeId: string;
  /** `--drivername` (default hostpath.csi.k8s.io). */
  driverName?: string;
  /** More hostpathplugin flags (`--max-volume-size=...`). */
  driverArgs?: string[];
}

/** One process of the pair, with its log file, its exit, and why it could not start (if so). */
interface Proc { child: ChildProcess; exited: Promise<void>; log: string; spawnError?: Error }

/** Waits (bounded by count and time) until `check` holds; throws saying `what` otherwise. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 300 && Date.now() < deadline; i++) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

function socketAnswers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect(socket);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

/** One gRPC call as hostpathplugin logs it at -v=5 (`gRPCCall: {...}`). */
export interface LoggedCall { Method: string; Request: any; Response: any; Error: string }

/**
 * hostpathplugin + csi-node-driver-registrar for one driver name. `start` runs the driver,
 * waits until its socket answers, then runs the registrar and waits for its registration
 * socket in the kubelet's registry dir; `stop` ends both (SIGTERM, SIGKILL after 5 s) and
 * removes their sockets. The driver logs every gRPC call with request and response, which is
 * what `calls` reads.
 */
export class RealCsiDriver {
  readonly driverName: string;
  readonly csiSocket: string;
  readonly stateDir: string;
  readonly registrationSocket: string;
  private driver: Proc | undefined;
  private registrar: Proc | undefined;

  constructor(readonly options: RealCsiDriverOptions) {
    this.driverName = options.driverName ?? 'hostpath.csi.k8s.io';
    this.csiSocket = path.join(options.dir, 'csi.sock');
    this.stateDir = path.join(options.dir, 'state');
    this.registrationSocket = path.join(options.registryDir, `${this.driverName}-reg.sock`);
  }

  async start(): Promise<void> {
    await fs.mkdir(this.stateDir, { recursive: true });
    await fs.mkdir(this.options.registryDir, { recursive: true, mode: 0o750 });
    this.driver = this.run(path.join(this.options.binDir, 'hostpathplugin'), [
      `--endpoint=unix://${this.csiSocket}`, `--nodeid=${this.options.nodeId}`, `--drivername=${this.driverName}`, `--statedir=${this.stateDir}`, '-v=5',
      ...(this.options.driverArgs ?? []),
    ], 'hostpathplugin.log');
    await this.waitAlive(this.driver, () => socketAnswers(this.csiSocket), 'hostpathplugin serves its CSI socket');
    this.registrar = this.run(path.join(this.options.binDir, 'csi-node-driver-registrar'), [
      `--csi-address=${this.csiSocket}`, `--kubelet-registration-path=${this.csiSocket}`, `--plugin-registration-path=${this.options.registryDir}`, '-v=5',
    ], 'registrar.log');
    await this.waitAlive(this.registrar, () => socketAnswers(this.registrationSocket), 'node-driver-registrar serves its registration socket');
  }

  private run(bin: string, args: string[], logName: string): Proc {
    const log = path.join(this.options.dir, logName);
    const fd = openSync(log, 'a');
    try {
      const child = spawn(bin, args, { stdio: ['ignore', fd, fd] });
      const proc: Proc = { child, log, exited: Promise.resolve() };
      // 'error' without 'exit' when the binary cannot be run at all.
      proc.exited = new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.once('error', (err) => {
          proc.spawnError = err;
          resolve();
        });
      });
      return proc;
    } finally {
      closeSync(fd);
    }
  }

  private async waitAlive(p: Proc, ready: () => Promise<boolean>, what: string): Promise<void> {
    try {
      await until(async () => {
        if (p.spawnError) throw new Error(`${path.basename(p.log, '.log')} could not be started: ${p.spawnError.message}`);
        if (p.child.exitCode !== null || p.child.signalCode !== null) throw new Error(`${path.basename(p.log, '.log')} exited (${p.child.exitCode ?? p.child.signalCode})`);
        return ready();
      }, what);
    } catch (err) {
      const tail = (await fs.readFile(p.log, 'utf8').catch(() => '')).split('\n').slice(-20).join('\n');
      throw new Error(`${(err as Error).message}; its log:\n${tail}`);
    }
  }

  /** The registrar's log (it logs kubelet's GetInfo and NotifyRegistrationStatus calls). */
  registrarLog(): Promise<string> {
    return fs.readFile(path.join(this.options.dir, 'registrar.log'), 'utf8').catch(() => '');
  }

  /** The gRPC calls the driver served, in order (optionally of one method, `NodePublishVolume`). */
  async calls(method?: string): Promise<LoggedCall[]> {
    const text = await fs.readFile(path.join(this.options.dir, 'hostpathplugin.log'), 'utf8').catch(() => '');
    const out: LoggedCall[] = [];
    for (const line of text.split('\n')) {
      const i = line.indexOf('gRPCCall: ');
      if (i < 0) continue;
      try {
        const call = JSON.parse(line.slice(i + 'gRPCCall: '.length)) as LoggedCall;
        if (!method || call.Method.endsWith(`/${method}`)) out.push(call);
      } catch {
        // A line cut by a concurrent write: the next read has it whole.
      }
    }
    return out;
  }

  /** Freezes the driver process (SIGSTOP): its calls hang until `resume`, as a stuck driver's would. */
  pause(): void {
    this.driver?.child.kill('SIGSTOP');
  }

  resume(): void {
    this.driver?.child.kill('SIGCONT');
  }

  /** Stops the registrar, then the driver; removes both sockets. Idempotent. */
  async stop(): Promise<void> {
    for (const p of [this.registrar, this.driver]) {
      if (!p || p.spawnError || p.child.exitCode !== null || p.child.signalCode !== null) continue;
      p.child.kill('SIGCONT');
      p.child.kill('SIGTERM');
      const timer = setTimeout(() => p.child.kill('SIGKILL'), 5000);
      await p.exited;
      clearTimeout(timer);
    }
    this.registrar = undefined;
    this.driver = undefined;
    await fs.rm(this.registrationSocket, { force: true });
    await fs.rm(this.csiSocket, { force: true });
  }
}
