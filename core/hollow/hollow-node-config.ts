import path from 'node:path';
import type { KubeletConfig } from '../config/types.ts';
import { hollowProberPlugin } from './hollow-prober.ts';
import { hollowRuntimePlugin } from './hollow-runtime.ts';
import { hollowVolumesPlugin } from './hollow-volumes.ts';

/** The name of hollow node `index`. */
export function hollowNodeName(prefix: string, index: number): string {
  return `${prefix}-${index}`;
}

/**
 * The config of hollow node `index`: the base (the config file and flags every node takes),
 * with what is the node's own (name, directories, pod IP range through its runtime) and what a
 * hollow node leaves off: no static pod sources, no ports (nothing of it listens: the Node
 * reports kubelet port 0), no cgroups, no certificate bootstrap or rotation (it uses the
 * process's kubeconfig), and its plugins: the hollow runtime, prober and volumes only.
 */
export function hollowNodeConfig(base: KubeletConfig, index: number, name: string, rootDir: string): KubeletConfig {
  const dir = path.join(rootDir, name);
  return {
    ...base,
    nodeName: name,
    rootDir: dir,
    podLogsDir: path.join(dir, 'logs'),
    certDirectory: path.join(dir, 'pki'),
    staticPodPath: undefined,
    staticPodURL: undefined,
    localObjectsDir: undefined,
    readOnlyPort: 0,
    healthzPort: 0,
    port: 0,
    cgroupsPerQOS: false,
    bootstrapKubeconfig: undefined,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    registerNode: true,
    plugins: [hollowRuntimePlugin(index), hollowProberPlugin(), hollowVolumesPlugin()],
  };
}
