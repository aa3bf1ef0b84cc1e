/**
 * The flags of `npm run up` / `scripts/up.sh`. Each has an environment variable as its
 * default (what earlier versions read), and the node directory holds everything the run
 * makes, so a second run (or a test) can live beside the first.
 */
import { join, resolve } from 'node:path';
import { parseCommandArgs } from '../../core/commands/command-args.ts';

export interface UpOptions {
  /** Everything of the node: containerd, the registry, the kubelet's root dir and log, the image cache. */
  nodeDir: string;
  /** The static pod manifests the kubelet runs. */
  manifests: string;
  registryPort: number;
  readOnlyPort: number;
  help: boolean;
}

export const UP_USAGE = `Usage: scripts/up.sh [flags]   (or npm run up -- [flags])
Starts a registry and a private containerd under the node dir and runs the kubelet in the
foreground on the static pods in the manifests dir, printing pod changes, warnings and errors.
Ctrl-C stops the kubelet, the pods, containerd and the registry.

Flags:
  --node-dir DIR          where the node lives (default .node, or $KUBELET_TS_NODE_DIR)
  --manifests DIR         static pod manifests (default examples, or $KUBELET_TS_MANIFESTS)
  --registry-port N       the loopback registry's port (default 5050, or $KUBELET_TS_REGISTRY_PORT)
  --read-only-port N      the kubelet's read-only port (default 10255, or $KUBELET_TS_READ_ONLY_PORT)
  -h, --help              this help
`;

function port(flag: string, value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 65535) throw new Error(`${flag}: '${value}' is not a port number; allowed: an integer 1-65535`);
  return Number(value);
}

/** Parses the flags (relative paths against `repo`); throws UsageError or Error with a one-line message. */
export function parseUpOptions(argv: string[], repo: string, env: NodeJS.ProcessEnv = process.env): UpOptions {
  const { values } = parseCommandArgs(argv, {
    'node-dir': { type: 'string' },
    manifests: { type: 'string' },
    'registry-port': { type: 'string' },
    'read-only-port': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  }, 0);
  return {
    nodeDir: resolve(repo, values['node-dir'] ?? env.KUBELET_TS_NODE_DIR ?? join(repo, '.node')),
    manifests: resolve(repo, values.manifests ?? env.KUBELET_TS_MANIFESTS ?? 'examples'),
    registryPort: port('--registry-port', values['registry-port'] ?? env.KUBELET_TS_REGISTRY_PORT ?? '5050'),
    readOnlyPort: port('--read-only-port', values['read-only-port'] ?? env.KUBELET_TS_READ_ONLY_PORT ?? '10255'),
    help: values.help === true,
  };
}
