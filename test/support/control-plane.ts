import { KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, pidAlive, run, which } from '../../tools/node-env/util.ts';
import { claimOncePerRun, refuseOnPureLane, SHARED_PARTS_ENV } from './once-per-run.ts';
import { realPartMissing } from './real-part.ts';

/**
 * The real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler v1.28.7) shared by the API tests of one mocha run, brought up by
 * `../shared/k8s/control-plane.sh` in the run's own directory `<os tmp>/kubelet-ts-cp-<pid>` on
 * free ports. It starts lazily on the first getControlPlane() call (unit-only runs never start
 * it) and is stopped (`down DIR --wipe`) and its directory removed by the root afterAll hook
 * (test/support/root-hooks.ts). Directories of earlier runs whose process died are swept first.
 *
 * Tests share it: each uses its own node names and namespaces (createTestNamespace) and
 * deletes what it creates.
 */

const PREFIX = 'kubelet-ts-cp-';
/** Control planes of tests' own, inside the run's directory. */
const OWN_PREFIX = 'own-';
const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** `shared/` is beside the project (CI clones it there), not at an absolute path. */
export const SHARED_DIR = resolve(PROJECT_ROOT, '..', 'shared');
const SCRIPT = join(SHARED_DIR, 'k8s', 'control-plane.sh');
/** `up` unpacks the binaries and makes the PKI on a fresh dir; the README allows ~200 s on a slow first run. */
const UP_TIMEOUT_MS = 240_000;

/**
 * The lifetime of what the controller-manager signs for CertificateSigningRequests in test
 * runs (its --cluster-signing-duration, the script's SIGNING_DURATION): 150 s, so a test sees
 * a kubelet renew its certificates and outlive the first one. The signer backdates notBefore by
 * 5 minutes (and, for a lifetime under 8 h, not notAfter), so such a certificate lives 450 s on
 * paper and is renewed 15 s to 105 s after it was signed (70-90 % of its life). The lifetime
 * cannot be much shorter: below 300 / 0.7 - 300 ≈ 129 s the earliest renewal deadline falls
 * before the certificate was signed, and each new certificate would be renewed at once. 150 s
 * keeps 15 s between a certificate's signing and its earliest renewal, which a loaded CI machine
 * needs between the CSR's approval and the kubelet holding the certificate (135 s, tried, leaves
 * 4.5 s: a renewal might then start as the certificate arrives). The test that watches a node
 * outlive its first certificate waits this long from the node's join.
 * A CSR's spec.expirationSeconds cannot do this: its minimum is 600 s.
 * Nothing else in a run uses CSR-signed certificates for longer (node-kubeconfig signs with
 * openssl, for a year; the kubeadm node test bootstraps with rotateCertificates and lasts
 * seconds); a kubelet that bootstraps without rotateCertificates has 150 s.
 */
export const TEST_SIGNING_DURATION_MS = 150_000;

export interface ControlPlane {
  /** The control plane's directory (binaries, PKI, etcd data, logs). */
  dir: string;
  /** The API server URL, `https://127.0.0.1:<port>`. */
  server: string;
  /** The admin kubeconfig (CN=admin, O=system:masters). */
  adminKubeconfig: string;
  /** A client for the admin kubeconfig. */
  admin: KubeConfig;
  /** Writes (once per node) and returns a kubeconfig for `system:node:<nodeName>` (group system:nodes). */
  nodeKubeconfig(nodeName: string): Promise<string>;
  /**
   * Writes `out`: a bootstrap kubeconfig with a new bootstrap token and kubeadm's RBAC (the
   * controller-manager approves the node client CSRs it makes); returns the token's id (its
   * Secret is kube-system/bootstrap-token-<id>).
   */
  bootstrapKubeconfig(out: string): Promise<{ file: string; tokenId: string }>;
  /** Seconds `up` took (for the test report). */
  upSeconds: number;
}

claimOncePerRun('test/support/control-plane.ts');

let cpPromise: Promise<ControlPlane> | undefined;
let runDir: string | undefined;

function log(line: string): void {
  if (process.env.KUBELET_TS_TEST_LOG) process.stderr.write(`[control-plane] ${line}\n`);
}

/** This run's directory: `<os tmp>/kubelet-ts-cp-<pid>`. */
export function controlPlaneBaseDir(): string {
  return join(tmpdir(), `${PREFIX}${process.pid}`);
}

/** Why the control plane cannot start here, or undefined if it can. */
export function controlPlaneUnavailableReason(): string | undefined {
  if (process.platform !== 'linux') return `the control plane needs Linux (this is ${process.platform})`;
  if (process.arch !== 'x64') return `the control plane binaries are linux/amd64 (this is ${process.arch})`;
  if (!existsSync(SCRIPT)) return `${SCRIPT} not found: the shared directory must be beside the project (../shared)`;
  const missing: string[] = [];
  if (!process.env.ETCD && !which('etcd')) missing.push('etcd not found: install the Debian package etcd-server (.ci/run and scripts/install-node-packages.sh --test do this)');
  for (const [bin, pkg] of [['curl', 'curl'], ['openssl', 'openssl'], ['setsid', 'util-linux'], ['flock', 'util-linux'], ['gzip', 'gzip']] as const) {
    if (!which(bin)) missing.push(`${bin} not found: install the Debian package ${pkg}`);
  }
  return missing.length ? missing.join('\n') : undefined;
}

/**
 * The control plane for a test that needs it: with `CI=true` a machine that cannot run it fails
 * the test; elsewhere the test is skipped with a message saying what is missing.
 */
export async function controlPlaneOrSkip(ctx: Mocha.Context): Promise<ControlPlane> {
  const reason = controlPlaneUnavailableReason();
  if (reason) realPartMissing(ctx, 'the control plane cannot start', reason);
  return getControlPlane();
}

/** Starts the shared control plane once per run (memoized) and returns it. */
export function getControlPlane(): Promise<ControlPlane> {
  refuseOnPureLane('the control plane');
  // Started by npm test's runner for several mocha processes (see SHARED_PARTS_ENV).
  const shared = process.env[SHARED_PARTS_ENV];
  if (shared) return (cpPromise ??= readFile(shared, 'utf8').then((text) => controlPlaneAt(JSON.parse(text).controlPlane)));
  cpPromise ??= start();
  // A failed start is not retried by later callers: they get the same error.
  return cpPromise;
}

/** True if getControlPlane() was called in this run. */
export function controlPlaneStarted(): boolean {
  return cpPromise !== undefined;
}

async function start(): Promise<ControlPlane> {
  const reason = controlPlaneUnavailableReason();
  if (reason) throw new Error(reason);
  await sweepStale();
  const base = controlPlaneBaseDir();
  runDir = base;
  return (await bringUp(base)).cp;
}

/**
 * A control plane in `<base>/cp` on free ports of its own; on failure `base` is stopped and
 * removed. Returns it with the env of its ports (for `up` again).
 */
async function bringUp(base: string): Promise<{ cp: ControlPlane; env: Record<string, string> }> {
  // A port free when picked can be taken before its component binds it (the script checks each
  // just before it starts that component and names it): try again on fresh ports, twice.
  for (let attempt = 1; ; attempt++) {
    try {
      return await bringUpOnce(base);
    } catch (err) {
      if (attempt >= 3 || !/is in use by another process/.test((err as Error).message)) throw err;
      log(`attempt ${attempt}: ${(err as Error).message.split('\n').at(-1)}; again on fresh ports`);
    }
  }
}

async function bringUpOnce(base: string): Promise<{ cp: ControlPlane; env: Record<string, string> }> {
  const dir = join(base, 'cp');
  await mkdir(base, { recursive: true });
  const ports = { API_PORT: await freePort(), ETCD_PORT: await freePort(), ETCD_PEER_PORT: await freePort(), KCM_PORT: await freePort(), SCHED_PORT: await freePort() };
  // The script's default gates plus user namespaces: without the gate the 1.28 API server drops
  // `hostUsers` from pods, and the node VM suite tests it (a pod that does not ask is unaffected).
  const env = { ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])), SIGNING_DURATION: `${TEST_SIGNING_DURATION_MS / 1000}s`, FEATURE_GATES: 'SidecarContainers=true,UserNamespacesSupport=true' };
  log(`up ${dir} ${JSON.stringify(ports)}`);
  const t0 = performance.now();
  let out;
  try {
    out = await run('bash', [SCRIPT, 'up', dir], { env, timeoutMs: UP_TIMEOUT_MS });
  } catch (err) {
    await stopDir(base).catch(() => {});
    throw new Error(`control-plane.sh up failed: ${(err as Error).message}`);
  }
  const upSeconds = (performance.now() - t0) / 1000;
  log(out.stdout.trim());
  const server = /server=(\S+)/.exec(out.stdout)?.[1] ?? `https://127.0.0.1:${ports.API_PORT}`;
  const adminKubeconfig = /kubeconfig=(\S+)/.exec(out.stdout)?.[1] ?? join(dir, 'admin.kubeconfig');
  return { cp: controlPlaneAt({ base, dir, server, adminKubeconfig, upSeconds }), env };
}

/** What test/support/shared-parts-main.ts writes of the control plane, from which controlPlaneAt makes it again. */
export interface ControlPlaneDescription {
  base: string;
  dir: string;
  server: string;
  adminKubeconfig: string;
  upSeconds: number;
}

/** The running control plane a description names (its clients and the script's commands on its dir). */
export function controlPlaneAt(d: ControlPlaneDescription): ControlPlane & { description: ControlPlaneDescription } {
  const { base, dir, server, adminKubeconfig, upSeconds } = d;
  const admin = new KubeConfig();
  admin.loadFromFile(adminKubeconfig);
  const written = new Map<string, Promise<string>>();
  return {
    description: d,
    dir,
    server,
    adminKubeconfig,
    admin,
    upSeconds,
    async bootstrapKubeconfig(out: string) {
      await run('bash', [SCRIPT, 'bootstrap-kubeconfig', dir, out], { timeoutMs: 60_000 });
      const token = /token: ([0-9a-z]{6})\.[0-9a-z]{16}/.exec(await readFile(out, 'utf8'))?.[1];
      if (!token) throw new Error(`${out}: no bootstrap token in it`);
      return { file: out, tokenId: token };
    },
    nodeKubeconfig(nodeName: string) {
      let p = written.get(nodeName);
      if (!p) {
        const file = join(base, 'nodes', `${nodeName}.kubeconfig`);
        p = run('bash', [SCRIPT, 'node-kubeconfig', dir, nodeName, file], { timeoutMs: 60_000 }).then(() => file);
        written.set(nodeName, p);
      }
      return p;
    },
  };
}

/**
 * A control plane of a test's own (for a test that wipes or restarts it: the run's shared one
 * must stay up under the other tests), started in `<run dir>/own-<what>-<n>` on free ports. The
 * test stops it (`stop()`); the run's teardown and the sweep of stale runs stop it too.
 */
export interface OwnControlPlane extends ControlPlane {
  /** `control-plane.sh down DIR` (`wipe`: with --wipe, deleting its etcd data). */
  down(opts?: { wipe?: boolean }): Promise<void>;
  /** `control-plane.sh up DIR` again, on the same ports and PKI. */
  up(): Promise<void>;
  /** Down with --wipe, and its directory removed. */
  stop(): Promise<void>;
}

let ownCount = 0;

/** Starts a control plane of the calling test's own (see OwnControlPlane); skips or fails as controlPlaneOrSkip. */
export async function ownControlPlaneOrSkip(ctx: Mocha.Context, what: string): Promise<OwnControlPlane> {
  await controlPlaneOrSkip(ctx);
  const base = join(controlPlaneBaseDir(), `${OWN_PREFIX}${what}-${++ownCount}`);
  const { cp, env } = await bringUp(base);
  return {
    ...cp,
    async down(opts = {}) {
      await run('bash', [SCRIPT, 'down', cp.dir, ...(opts.wipe ? ['--wipe'] : [])], { timeoutMs: 90_000 });
    },
    async up() {
      await run('bash', [SCRIPT, 'up', cp.dir], { env, timeoutMs: UP_TIMEOUT_MS });
    },
    stop: () => stopDir(base),
  };
}

/** Stops the control plane if this run started it, and removes its directory. Idempotent. */
export async function stopControlPlane(): Promise<void> {
  // Attached to the runner's control plane (SHARED_PARTS_ENV): its owner stops it; what is this
  // process's own is the dir of the control planes its tests made for themselves.
  if (process.env[SHARED_PARTS_ENV] && existsSync(controlPlaneBaseDir())) await stopDir(controlPlaneBaseDir());
  if (!cpPromise || !runDir) return;
  const base = runDir;
  cpPromise = undefined;
  runDir = undefined;
  await stopDir(base);
}

async function stopDir(base: string): Promise<void> {
  // Tests' own control planes inside it first (a run that died left them running).
  for (const name of await readdir(base).catch(() => [] as string[])) {
    if (name.startsWith(OWN_PREFIX)) await stopDir(join(base, name));
  }
  const dir = join(base, 'cp');
  if (existsSync(dir)) {
    log(`down ${dir}`);
    await run('bash', [SCRIPT, 'down', dir, '--wipe'], { timeoutMs: 90_000, allowFailure: true });
  }
  if (!process.env.KUBELET_TS_KEEP_TEST_ENV) await rm(base, { recursive: true, force: true });
}

/** Stops and removes control planes of earlier runs whose process died without stopping them. */
async function sweepStale(): Promise<void> {
  const dir = tmpdir();
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.startsWith(PREFIX)) continue;
    const pid = Number(name.slice(PREFIX.length));
    if (!(pid > 0) || pid === process.pid || pidAlive(pid)) continue;
    log(`sweeping stale control plane ${join(dir, name)}`);
    try {
      await stopDir(join(dir, name));
    } catch (err) {
      log(`could not sweep ${join(dir, name)}: ${(err as Error).message}`);
    }
  }
}
