/**
 * Flags as settings of the config: the typed ConfigFlags of programmatic callers turned into
 * the command-line settings they stand for, and flags that would set one thing twice.
 */
import type { FlagSetting } from './upstream-flags.ts';

/** Command-line values that override the file, named after the upstream kubelet flags (typed, for programmatic callers). */
export interface ConfigFlags {
  podManifestPath?: string;
  manifestUrl?: string;
  manifestUrlHeader?: Record<string, string[]>;
  containerRuntimeEndpoint?: string;
  rootDir?: string;
  nodeName?: string;
  readOnlyPort?: number;
  nodeIP?: string;
  logLevel?: string;
  kubeconfig?: string;
  port?: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDirectory?: string;
  bootstrapKubeconfig?: string;
  rotateCertificates?: boolean;
  imageCredentialProviderConfig?: string;
  imageCredentialProviderBinDir?: string;
}

/** Each ConfigFlags member as the command-line flag it stands for. */
const CONFIG_FLAG_NAMES: Record<keyof ConfigFlags, string> = {
  podManifestPath: 'pod-manifest-path',
  manifestUrl: 'manifest-url',
  manifestUrlHeader: 'manifest-url-header',
  containerRuntimeEndpoint: 'container-runtime-endpoint',
  rootDir: 'root-dir',
  nodeName: 'node-name',
  readOnlyPort: 'read-only-port',
  nodeIP: 'node-ip',
  logLevel: 'log-level',
  kubeconfig: 'kubeconfig',
  port: 'port',
  tlsCertFile: 'tls-cert-file',
  tlsPrivateKeyFile: 'tls-private-key-file',
  certDirectory: 'cert-dir',
  bootstrapKubeconfig: 'bootstrap-kubeconfig',
  rotateCertificates: 'rotate-certificates',
  imageCredentialProviderConfig: 'image-credential-provider-config',
  imageCredentialProviderBinDir: 'image-credential-provider-bin-dir',
};

/** ConfigFlags as the command-line settings they stand for. */
export function configFlagSettings(flags: ConfigFlags): FlagSetting[] {
  const out: FlagSetting[] = [];
  for (const [key, value] of Object.entries(flags)) {
    if (value === undefined) continue;
    const flag = CONFIG_FLAG_NAMES[key as keyof ConfigFlags];
    out.push({ flag, spelling: `--${flag}`, value });
  }
  return out;
}

/** Two flags that set one thing are a mistake to name, not a race to settle. */
export function flagConflicts(settings: FlagSetting[]): string[] {
  const given = new Set(settings.map((s) => s.flag));
  const errors: string[] = [];
  for (const [a, b, what] of [['node-name', 'hostname-override', 'the node name'], ['log-level', 'v', 'the log level']] as const) {
    if (given.has(a) && given.has(b)) errors.push(`--${a} and --${b} both set ${what}; give one`);
  }
  return errors;
}
