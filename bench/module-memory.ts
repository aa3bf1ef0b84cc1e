import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { isMain, round, runMain, table } from './lib.ts';

/**
 * module-memory: what loading each part of kubelet-ts costs before it does anything, the first
 * step of finding where a node's memory goes (issue 25 item 3). Each row is a fresh `node`
 * process that imports the compiled module(s) (`dist/`, as `bin/kubelet-ts.mjs` runs), runs the
 * GC twice and reports process.memoryUsage(); the delta is over a process that imported nothing.
 * Rows are measured one after another, three times each, and the median kept.
 *
 *   npm run build && npx tsx bench/module-memory.ts
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = (p: string) => JSON.stringify(path.join(root, 'dist', p));
const pkg = (p: string) => JSON.stringify(p);

interface Row { name: string; code: string }

const ROWS: Row[] = [
  { name: 'node alone', code: '' },
  { name: 'pino + ajv + tapable + cosmiconfig', code: `await import(${pkg('pino')}); await import(${pkg('ajv')}); await import(${pkg('tapable')}); await import(${pkg('cosmiconfig')});` },
  { name: '@kubernetes/client-node', code: `await import(${pkg('@kubernetes/client-node')});` },
  { name: '@grpc/grpc-js', code: `await import(${pkg('@grpc/grpc-js')});` },
  { name: '@grpc/grpc-js + protobufjs', code: `await import(${pkg('@grpc/grpc-js')}); await import(${pkg('protobufjs')});` },
  // How the CRI protos were loaded until 2026-11-27: proto-loader's package definition, with its reflection descriptors.
  { name: '@grpc/grpc-js + CRI proto through @grpc/proto-loader', code: `const g = await import(${pkg('@grpc/grpc-js')}); const pl = await import(${pkg('@grpc/proto-loader')}); const p = ${dist('plugins/cri-containerd/proto/api.proto')}; globalThis.kept = g.loadPackageDefinition(pl.loadSync(p, { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true }));` },
  { name: '@grpc/grpc-js + CRI proto loaded', code: `const m = await import(${dist('plugins/cri-containerd/proto-loader.js')}); m.loadCriPackage(); m.loadContentService();` },
  { name: 'prom-client', code: `await import(${pkg('prom-client')});` },
  { name: 'core/kubelet.js (the core, no plugin)', code: `await import(${dist('core/kubelet.js')});` },
  { name: 'core/kubelet.js + apiserver side', code: `await import(${dist('core/kubelet.js')}); await import(${dist('core/node/api-node.js')}); await import(${dist('core/apiserver/api-client.js')});` },
  { name: 'the default bundle (core + its plugins, CRI proto loaded)', code: `await import(${dist('core/kubelet.js')}); await import(${dist('kubelet.config.js')}); const m = await import(${dist('plugins/cri-containerd/proto-loader.js')}); m.loadCriPackage(); m.loadContentService();` },
  { name: 'the default bundle + every proto a default node loads at start (CRI, device plugin, pod resources)', code: `await import(${dist('core/kubelet.js')}); await import(${dist('kubelet.config.js')}); const m = await import(${dist('plugins/cri-containerd/proto-loader.js')}); m.loadCriPackage(); m.loadContentService(); (await import(${dist('plugins/device-plugins/protos.js')})).loadDevicePluginProtos(); (await import(${dist('plugins/pod-resources/server.js')})).loadPodResourcesLister();` },
];

interface Usage { rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number }

async function measureOnce(code: string): Promise<Usage> {
  const script = `${code}\nglobalThis.gc(); await new Promise((r) => setTimeout(r, 50)); globalThis.gc();\nprocess.stdout.write(JSON.stringify(process.memoryUsage()));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { cwd: root, timeout: 60_000 });
  return JSON.parse(stdout) as Usage;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(opts: { repeat?: number; print?: (s: string) => void } = {}): Promise<Array<{ name: string; usage: Usage }>> {
  const repeat = opts.repeat ?? 3;
  const out: Array<{ name: string; usage: Usage }> = [];
  for (const row of ROWS) {
    const samples: Usage[] = [];
    for (let i = 0; i < repeat; i++) samples.push(await measureOnce(row.code));
    const pick = (k: keyof Usage) => median(samples.map((s) => s[k]));
    out.push({ name: row.name, usage: { rss: pick('rss'), heapUsed: pick('heapUsed'), heapTotal: pick('heapTotal'), external: pick('external'), arrayBuffers: pick('arrayBuffers') } });
  }
  const base = out[0]!.usage;
  const mib = (b: number) => round(b / 2 ** 20, 1);
  const rows = [
    ['loaded', 'RSS MiB', 'Δ RSS', 'heap used MiB', 'Δ heap', 'external MiB'],
    ...out.map(({ name, usage: u }) => [name, mib(u.rss), mib(u.rss - base.rss), mib(u.heapUsed), mib(u.heapUsed - base.heapUsed), mib(u.external)].map(String)),
  ];
  (opts.print ?? ((s) => process.stdout.write(`${s}\n`)))(`module-memory: median of ${repeat} fresh processes each, ${process.version}, after two GCs\n${table(rows)}`);
  return out;
}

if (await isMain(import.meta.url)) await runMain(() => run());
