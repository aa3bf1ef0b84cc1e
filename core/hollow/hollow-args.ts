import { parseCommandArgs, UsageError } from '../commands/command-args.ts';
import { parseFlagValue } from '../commands/kubelet-command-line.ts';
import { KUBELET_FLAGS, type FlagSetting } from '../config/upstream-flags.ts';
import { MAX_HOLLOW_NODES } from './hollow-runtime.ts';
import { parseHollowCapacity, type HollowCapacity } from './hollow-machine.ts';

export const HOLLOW_USAGE = `Usage: kubelet-ts hollow --nodes N --kubeconfig FILE --node-name-prefix P [flags]
Runs N hollow nodes in one process against a real API server: each the kubelet core (the API pod
source, sync loop, pod workers, PLEG, status manager, node status, Lease, events, admission,
volumes, a prober) on an in-memory runtime whose containers "run" until deleted. A tool for
testing a control plane, a scheduler or an autoscaler at scale. Nodes are named P-0 .. P-(N-1).
Ctrl-C stops them and removes nothing from the API; with --cleanup their Nodes and Leases go.

  --nodes N                  how many nodes (1..${MAX_HOLLOW_NODES})
  --kubeconfig FILE          the API server and the identity to reach it with
  --node-name-prefix P       node names are P-0, P-1, ...
  --identity node|kubeconfig node (default): each node acts as system:node:<name> (group system:nodes),
                             impersonated with the kubeconfig's identity (which must be allowed to
                             impersonate: system:masters is), so the Node authorizer and
                             NodeRestriction apply to every node; kubeconfig: every node acts as the
                             kubeconfig's identity (as kubemark's hollow nodes share one kubeconfig)
  --node-labels k=v,...      labels every Node registers with
  --register-with-taints k=v:Effect,...  taints every Node registers with
  --max-pods N               pods each node admits (default 110)
  --capacity cpu=N,memory=Q,ephemeral-storage=Q
                             what each node reports of its machine (default the host's CPUs, memory and
                             the disk of the root dir); allocatable is that minus the usual reservations
  --node-ip IP               the address every node reports (default 127.0.0.1)
  --cluster-dns IP,...       the cluster's DNS service: ClusterFirst pods get it (without it each such pod
                             gets a DNSConfigForming warning event, as on a real node)
  --root-dir DIR             the nodes' state, DIR/<node> (default a temporary directory, removed at exit)
  --config FILE              a kubelet-ts config whose settings every node takes (periods, kubeAPIQPS,
                             ...); its plugins, paths, ports and cgroups are the hollow node's own
  --cleanup                  at exit, delete the Nodes (and their Leases) from the API
  --log-level LEVEL          the nodes' log level (default warn; the command's own lines are info)
  -h, --help                 this help
`;

export interface HollowArgs {
  nodes: number;
  kubeconfig: string;
  prefix: string;
  identity: 'node' | 'kubeconfig';
  rootDir: string | undefined;
  configFile: string | undefined;
  cleanup: boolean;
  logLevel: string;
  capacity: HollowCapacity;
  help: boolean;
  /** Settings every node's config takes, as `kubelet-ts run`'s flags set them (checked by the config loader). */
  settings: FlagSetting[];
}

/** A DNS-1123 label: what a node name built from the prefix must stay within. */
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Parses the hollow command's flags. Throws UsageError (or ConfigError for a value of the wrong type). */
export function parseHollowArgs(argv: string[]): HollowArgs {
  const { values } = parseCommandArgs(argv, {
    nodes: { type: 'string' },
    kubeconfig: { type: 'string' },
    'node-name-prefix': { type: 'string' },
    identity: { type: 'string' },
    'node-labels': { type: 'string', multiple: true },
    'register-with-taints': { type: 'string', multiple: true },
    'max-pods': { type: 'string' },
    capacity: { type: 'string' },
    'node-ip': { type: 'string' },
    'cluster-dns': { type: 'string' },
    'root-dir': { type: 'string' },
    config: { type: 'string' },
    cleanup: { type: 'boolean' },
    'log-level': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  }, 0);
  const help = values.help === true;
  if (help) return { nodes: 0, kubeconfig: '', prefix: '', identity: 'node', rootDir: undefined, configFile: undefined, cleanup: false, logLevel: 'warn', capacity: {}, help, settings: [] };
  const required = (name: 'nodes' | 'kubeconfig' | 'node-name-prefix') => {
    const v = values[name];
    if (v === undefined || v === '') throw new UsageError(`flag --${name} is required`);
    return v;
  };
  const nodesText = required('nodes');
  const nodes = Number(nodesText);
  if (!/^\d+$/.test(nodesText) || nodes < 1 || nodes > MAX_HOLLOW_NODES) throw new UsageError(`--nodes ${nodesText}: expected a whole number from 1 to ${MAX_HOLLOW_NODES}`);
  const prefix = required('node-name-prefix');
  const longest = `${prefix}-${nodes - 1}`;
  if (!LABEL.test(prefix) || longest.length > 63) throw new UsageError(`--node-name-prefix ${prefix}: node names such as ${longest} must be DNS labels (lower-case letters, digits and '-', at most 63 characters)`);
  const identity = values.identity ?? 'node';
  if (identity !== 'node' && identity !== 'kubeconfig') throw new UsageError(`--identity ${identity}: expected node or kubeconfig`);
  const settings: FlagSetting[] = [];
  const setting = (flag: string, value: string) => settings.push({ flag, spelling: `--${flag}`, value: parseFlagValue(KUBELET_FLAGS[flag]!, value, `--${flag}`) });
  setting('kubeconfig', required('kubeconfig'));
  // Repeated map and list flags add up, as on the kubelet's command line.
  const labels = values['node-labels'];
  if (labels?.length) settings.push({ flag: 'node-labels', spelling: '--node-labels', value: Object.assign({}, ...labels.map((l) => parseFlagValue(KUBELET_FLAGS['node-labels']!, l, '--node-labels') as object)) });
  const taints = values['register-with-taints'];
  if (taints?.length) settings.push({ flag: 'register-with-taints', spelling: '--register-with-taints', value: taints.flatMap((t) => parseFlagValue(KUBELET_FLAGS['register-with-taints']!, t, '--register-with-taints') as unknown[]) });
  if (values['max-pods'] !== undefined) setting('max-pods', values['max-pods']);
  setting('node-ip', values['node-ip'] ?? '127.0.0.1');
  if (values['cluster-dns'] !== undefined) setting('cluster-dns', values['cluster-dns']);
  let capacity: HollowCapacity = {};
  if (values.capacity !== undefined) {
    try {
      capacity = parseHollowCapacity(parseFlagValue(KUBELET_FLAGS['node-labels']!, values.capacity, '--capacity') as Record<string, string>);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const logLevel = values['log-level'] ?? 'warn';
  setting('log-level', logLevel);
  return {
    nodes,
    kubeconfig: values.kubeconfig!,
    prefix,
    identity,
    rootDir: values['root-dir'],
    configFile: values.config,
    cleanup: values.cleanup === true,
    logLevel,
    capacity,
    help,
    settings,
  };
}
