/**
 * The kubelet a fuzz kind runs against, on real containerd: its own process
 * (startKubeletProcess), with one static pod running (busybox, `sleep`) that the fuzz must not
 * disturb and that requests aim at by its real names.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeEnv } from '../../../tools/node-env/index.ts';
import { startKubeletProcess, type KubeletProcess, type KubeletProcessOptions } from '../../support/kubelet-process.ts';
import type { RequestTarget } from '../request-cases.ts';
import { podFacts, type PodFacts } from './report.ts';

export interface FuzzKubelet {
  k: KubeletProcess;
  /** The running pod: namespace, full name, container. */
  target: RequestTarget;
  pod(): Promise<PodFacts | undefined>;
  /** Removes the pod's manifest, waits (bounded) until the pod is gone, stops the kubelet. */
  stop(): Promise<void>;
}

const MANIFEST = 'fuzz-sentinel.json';

export async function startFuzzKubelet(env: NodeEnv, opts: KubeletProcessOptions = {}): Promise<FuzzKubelet> {
  const k = await startKubeletProcess(env, opts);
  const target: RequestTarget = { namespace: 'default', pod: 'fuzz-sentinel-bench-node', container: 'main' };
  const pod = async () => podFacts((await k.pods())?.find((p) => p.metadata?.name === target.pod));
  const stop = async () => {
    await k.removeManifest(MANIFEST);
    for (let i = 0; i < 120 && (await k.pods())?.some((p) => p.metadata?.name === target.pod); i++) await sleep(250);
    await k.stop();
  };
  try {
    await k.writeManifest(MANIFEST, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'fuzz-sentinel' },
      spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: env.images.busybox, command: ['sleep', '36000'] }] },
    });
    for (let i = 0; !(await pod())?.running; i++) {
      if (i > 360) throw new Error('the fuzz sentinel pod did not run within 90 s');
      await sleep(250);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { k, target, pod, stop };
}
