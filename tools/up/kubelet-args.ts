/**
 * The kubelet's command line under `npm run up`: a standalone node (no --kubeconfig, so no
 * cluster and no cluster DNS) on the example manifests, the private containerd, a root dir
 * in the node dir, and 127.0.0.1 as its node IP (the registry and the read-only port are on
 * loopback). A test reads the same flags to check the examples start clean on such a node.
 */
export function upKubeletArgs(opts: { manifests: string; containerdEndpoint: string; rootDir: string; readOnlyPort: number }): string[] {
  return [
    '--pod-manifest-path', opts.manifests,
    '--container-runtime-endpoint', opts.containerdEndpoint,
    '--root-dir', opts.rootDir,
    '--read-only-port', String(opts.readOnlyPort),
    '--node-ip', '127.0.0.1',
  ];
}
