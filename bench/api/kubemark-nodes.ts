import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { once } from 'node:events';
import path from 'node:path';
import { freePort } from '../../tools/node-env/util.ts';

/**
 * Upstream's hollow node, kubemark v1.28.7 (`--morph=kubelet`: a real kubelet with a fake
 * runtime and fake cAdvisor), one process per node as SIG Scalability runs it, as the shared
 * control plane's README says to start it. Each process gets its own kubeconfig (its node's
 * identity, through its own counting proxy) and a free kubelet port; the read-only port is off
 * and the fake image service is used, so it touches no containerd. kubemark makes a root dir
 * `/tmp/hollow-kubelet.<n>` whatever TMPDIR says and never removes it: `stop()` removes the one
 * each process names in its log.
 */
export interface KubemarkNodes {
  pids: number[];
  names: string[];
  /** SIGTERM to every process, SIGKILL after 20 s; removes the root dir each made. */
  stop(): Promise<void>;
}

/** The root dir as kubemark's log names it. */
const HOLLOW_ROOT = /\/tmp\/hollow-kubelet\.\d+/g;

/** The kubemark binary `control-plane.sh up` unpacks into the control plane's bin dir, if there. */
export function kubemarkBinary(clusterDir: string): string | undefined {
  const bin = path.join(clusterDir, 'bin', 'kubemark');
  return existsSync(bin) ? bin : undefined;
}

export async function startKubemarkNodes(opts: {
  binary: string;
  nodes: Array<{ name: string; kubeconfig: string }>;
  labels: Record<string, string>;
  logDir: string;
}): Promise<KubemarkNodes> {
  const children: ChildProcess[] = [];
  const labels = Object.entries(opts.labels).map(([k, v]) => `${k}=${v}`).join(',');
  const logs: string[] = [];
  for (const node of opts.nodes) {
    const log = path.join(opts.logDir, `${node.name}.log`);
    logs.push(log);
    const out = createWriteStream(log);
    await once(out, 'open');
    const child = spawn(opts.binary, [
      '--morph=kubelet', `--name=${node.name}`, `--kubeconfig=${node.kubeconfig}`, `--kubelet-port=${await freePort()}`,
      '--kubelet-read-only-port=0', '--use-host-image-service=false', `--node-labels=${labels}`,
    ], { stdio: ['ignore', out, out] });
    child.once('exit', () => out.end());
    children.push(child);
  }
  return {
    pids: children.map((c) => c.pid!),
    names: opts.nodes.map((n) => n.name),
    async stop() {
      await Promise.all(children.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        const exited = once(c, 'exit');
        c.kill('SIGTERM');
        const timer = setTimeout(() => c.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      }));
      for (const log of logs) {
        for (const dir of new Set((await readFile(log, 'utf8').catch(() => '')).match(HOLLOW_ROOT) ?? [])) await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
