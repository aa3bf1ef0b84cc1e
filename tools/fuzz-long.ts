/**
 * `npm run fuzz:long`: fuzzing at scale against a real kubelet-ts process, one kind after the
 * other, each on a kubelet of its own (so each kind's RSS figures are its own):
 *
 *   manifests  generated manifests dropped into the static pod directory (real containerd)
 *   requests   hostile requests to the main port's handlers through the local socket (real containerd)
 *   api-pods   odd pods through the real API server (../shared/k8s), bound to the node; the
 *              node is `kubelet-ts hollow` (the kubelet core on the in-memory runtime) unless
 *              --runtime containerd (a kubelet-ts process on real containerd: ~0.3 s a sandbox)
 *
 *   npm run fuzz:long -- --kind all --seed 1 --count 100000 [--rounds 5] [--minutes 20]
 *     [--from I] [--runtime memory|containerd] [--concurrency 32] [--malloc-arena-max N] [--out report.json]
 *     [--keep-log FILE]  (api-pods on containerd: the kubelet's log copied there before its dir goes)
 *
 * Prints, per kind: inputs sent, crashes (the kubelet exited, or its running pod was
 * disturbed), the kubelet's RSS before, at its peak and after a settle, its memory after each
 * round, and a reproduce line (seed and index) for any failure. Exit code 1 on a crash.
 */
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { createNamespace } from '../bench/api/api-pods.ts';
import { withBenchRun } from '../bench/api/bench-run.ts';
import { startCluster } from '../bench/api/cluster.ts';
import { round, withNodeEnv } from '../bench/lib.ts';
import { startHollowProcess } from '../test/support/hollow-process.ts';
import { startKubeletProcess } from '../test/support/kubelet-process.ts';
import { runApiPodsFuzz } from '../test/fuzz/long/api-pods-kind.ts';
import { startFuzzKubelet } from '../test/fuzz/long/fuzz-kubelet.ts';
import { runManifestsFuzz } from '../test/fuzz/long/manifests-kind.ts';
import { formatReport, noteInterrupted, reportOnSignalOptions, type KindReport } from '../test/fuzz/long/report.ts';
import { runRequestsFuzz } from '../test/fuzz/long/requests-kind.ts';
import { run as runCommand } from './node-env/util.ts';

const KINDS = ['manifests', 'requests', 'api-pods'] as const;
type Kind = (typeof KINDS)[number];

const USAGE = 'usage: npm run fuzz:long -- --kind manifests|requests|api-pods|all --seed N --count N [--from I] [--rounds N] [--minutes M] [--runtime memory|containerd] [--concurrency N] [--malloc-arena-max N] [--out FILE] [--keep-log FILE]';

function intArg(v: string | undefined, name: string, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer from ${min} to ${max}, got ${v}\n${USAGE}`);
  return n;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      kind: { type: 'string', default: 'all' }, seed: { type: 'string' }, count: { type: 'string' }, from: { type: 'string' },
      rounds: { type: 'string' }, minutes: { type: 'string' }, runtime: { type: 'string', default: 'memory' },
      concurrency: { type: 'string' }, 'malloc-arena-max': { type: 'string' }, out: { type: 'string' }, 'keep-log': { type: 'string' }, help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const kinds: Kind[] = values.kind === 'all' ? [...KINDS] : KINDS.includes(values.kind as Kind) ? [values.kind as Kind] : [];
  if (!kinds.length) throw new Error(`--kind ${values.kind}: expected one of ${KINDS.join(', ')} or all\n${USAGE}`);
  if (values.runtime !== 'memory' && values.runtime !== 'containerd') throw new Error(`--runtime ${values.runtime}: expected memory or containerd`);
  const seed = intArg(values.seed, 'seed', 1, 0, 0xffff_ffff);
  const count = intArg(values.count, 'count', 1000, 1, 1_000_000);
  const from = intArg(values.from, 'from', 0, 0, 1_000_000_000);
  const rounds = intArg(values.rounds, 'rounds', 5, 1, 100);
  const minutes = intArg(values.minutes, 'minutes', 30, 1, 24 * 60);
  const concurrency = intArg(values.concurrency, 'concurrency', 32, 1, 512);
  // The kubelet inherits the environment: glibc reads MALLOC_ARENA_MAX at its start.
  if (values['malloc-arena-max'] !== undefined) process.env.MALLOC_ARENA_MAX = String(intArg(values['malloc-arena-max'], 'malloc-arena-max', 0, 1, 64));
  // The kubelet's V8 heap after each round, from a diagnostic report on SIGUSR2 (no inspector).
  const reportDir = await mkdtemp(path.join(os.tmpdir(), 'kts-fuzz-reports-'));
  process.env.NODE_OPTIONS = reportOnSignalOptions(reportDir);
  const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
  const reproduce = (kind: Kind) => (i: number) => `npm run fuzz:long -- --kind ${kind} --seed ${seed} --from ${i} --count 1${kind === 'api-pods' ? ` --runtime ${values.runtime}` : ''}`;
  // Each kind its share of the time; a kind stops sending at its bound and reports what ran.
  const deadlineFor = (k: number) => performance.now() + ((minutes * 60_000) / kinds.length) * (k + 1) - 5000;
  const reports: KindReport[] = [];
  // Ctrl-C or a SIGTERM (`timeout`, `kill`) ends the run as the kubelet's exit ends a kind: the
  // kubelet is stopped (it may have had the signal already, in the same process group), the kind
  // reports what ran and says it was interrupted rather than counting a crash, and the clean-up
  // runs (containerd, the control plane).
  let kubeletPid: number | undefined;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      noteInterrupted(signal);
      if (kubeletPid) process.kill(kubeletPid, 'SIGTERM');
    });
  }
  log(`fuzz:long: kinds ${kinds.join(', ')}, seed ${seed}, count ${count} each${from ? ` from index ${from}` : ''}, at most ${minutes} min${process.env.MALLOC_ARENA_MAX ? `, MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX}` : ''}`);
  const needNodeEnv = kinds.some((k) => k !== 'api-pods') || values.runtime === 'containerd';
  const run = async (env: Parameters<typeof startFuzzKubelet>[0] | undefined) => {
    for (const [n, kind] of kinds.entries()) {
      const deadline = deadlineFor(n);
      log(`${kind}: starting`);
      if (kind === 'requests' || kind === 'manifests') {
        const fk = await startFuzzKubelet(env!);
        kubeletPid = fk.k.pid;
        try {
          log(`${kind}: kubelet pid ${fk.k.pid} (${fk.k.code}), its pod ${fk.target.namespace}/${fk.target.pod} Running`);
          reports.push(kind === 'requests'
            ? await runRequestsFuzz({ kubelet: fk.k, reportDir, socketPath: fk.k.socketPath, target: fk.target, pod: fk.pod, seed, count, from, rounds, concurrency, deadline, reproduce: reproduce(kind), log })
            : await runManifestsFuzz({ kubelet: fk.k, reportDir, manifestDir: fk.k.manifestDir, logFile: fk.k.logFile, pod: fk.pod, podName: fk.target.pod, seed, count, from, rounds, deadline, reproduce: reproduce(kind), log }));
        } finally {
          await fk.stop();
        }
      } else {
        await withBenchRun(log, async (br) => {
          const cluster = await startCluster(await br.subdir('cp'), br.defer, log);
          const ns = `fuzz-${seed}`;
          await createNamespace(cluster.admin, ns);
          let kubelet;
          let nodeName: string;
          // The API client's rate limit raised (upstream's 50/s, burst 100, would make a pod of
          // 100 containers and its 300 events the bottleneck): what is fuzzed is the handling.
          const api = { kubeAPIQPS: 1000, kubeAPIBurst: 2000 };
          if (values.runtime === 'memory') {
            const config = path.join(await br.subdir('hollow'), 'hollow.config.json');
            await writeFile(config, JSON.stringify(api));
            const h = await startHollowProcess({ nodes: 1, kubeconfig: cluster.adminKubeconfig, prefix: 'fz', args: ['--max-pods', '1000', '--cleanup', '--config', config] });
            br.defer('hollow node', () => h.stop('SIGTERM'));
            kubelet = h;
            nodeName = h.names[0]!;
          } else {
            nodeName = 'fz-node';
            const k = await startKubeletProcess(env!, { startTimeoutMs: 120_000, maxPods: 250, config: { kubeconfig: await cluster.nodeKubeconfig(nodeName), nodeName, nodeIP: '127.0.0.1', ...api } });
            // Stopped once its pods are gone (bounded): a kubelet stopped mid-termination leaves
            // the pods' tmpfs volumes mounted under its directory.
            br.defer('kubelet', async () => {
              await cluster.admin.request('DELETE', `/api/v1/namespaces/${ns}/pods`, { gracePeriodSeconds: 0 }, { allow: [404] }).catch(() => undefined);
              for (let i = 0; i < 240 && ((await k.pods()) ?? []).length > 0; i++) await sleep(500);
              const left = ((await k.pods()) ?? []).length;
              await k.stop({ keepDir: true });
              // What teardowns still in progress left mounted (said, then unmounted here).
              const mounts = (await readFile('/proc/mounts', 'utf8')).split('\n').map((l) => l.split(' ')[1] ?? '').filter((m) => m.startsWith(`${k.dir}/`)).sort().reverse();
              if (left || mounts.length) log(`api-pods: the kubelet still had ${left} pods 2 min after they were deleted; ${mounts.length} mounts of theirs left under ${k.dir} (unmounted now)`);
              for (const m of mounts) await runCommand('umount', ['-l', m], { allowFailure: true });
              if (values['keep-log']) await copyFile(k.logFile, path.resolve(values['keep-log']));
              await rm(k.dir, { recursive: true, force: true });
            });
            kubelet = k;
          }
          kubeletPid = kubelet.pid;
          log(`api-pods: node ${nodeName} (${values.runtime}: pid ${kubelet.pid})`);
          // The API server's share: each odd pod is megabytes it decodes, validates and stores several times.
          const cp0 = await cluster.cpuSeconds();
          const report = await runApiPodsFuzz({ kubelet, reportDir, admin: cluster.admin, namespace: ns, nodeName, image: env?.images.busybox ?? 'busybox', seed, count, from, rounds, deadline, batch: values.runtime === 'memory' ? 50 : 20, reproduce: reproduce(kind), log });
          const cp1 = await cluster.cpuSeconds();
          if (cp0 !== undefined && cp1 !== undefined) report.otherCpuS = { 'control plane (etcd, API server, controller manager, scheduler)': round(cp1 - cp0, 1) };
          reports.push(report);
        });
      }
      process.stdout.write(`${formatReport(reports.at(-1)!)}\n`);
    }
  };
  try {
    if (needNodeEnv) await withNodeEnv({ log }, run);
    else await run(undefined);
  } finally {
    await rm(reportDir, { recursive: true, force: true });
  }
  if (values.out) await writeFile(path.resolve(values.out), `${JSON.stringify({ date: new Date().toISOString(), seed, count, from, kinds, runtime: values.runtime, mallocArenaMax: process.env.MALLOC_ARENA_MAX ?? null, reports }, null, 2)}\n`);
  return reports.some((r) => r.crashes.length) ? 1 : 0;
}

main().then((code) => process.exit(code), (err: Error) => {
  process.stderr.write(`${err.stack ?? String(err)}\n`);
  process.exit(2);
});
