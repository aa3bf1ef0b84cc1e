/** Config fields by dotted path (`authentication.x509.clientCAFile`), in nested objects. */

/** kubelet-ts fields that hold a path: a path from a flag is relative to the working directory, one from a file to the file. */
export const PATH_FIELDS = new Set(['rootDir', 'podLogsDir', 'staticPodPath', 'localObjectsDir', 'kubeconfig', 'bootstrapKubeconfig', 'tlsCertFile', 'tlsPrivateKeyFile', 'certDirectory', 'authentication.x509.clientCAFile', 'resolvConf', 'volumePluginDir', 'imageCredentialProviderConfig', 'imageCredentialProviderBinDir']);

/** Sets `dotted` in `target`, making the objects on the way. */
export function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    node = (node[part] = next !== null && typeof next === 'object' && !Array.isArray(next) ? next : {}) as Record<string, unknown>;
  }
  node[parts[parts.length - 1]!] = value;
}

/** The value at `dotted`, undefined when a step is missing. */
export function getPath(doc: Record<string, unknown>, dotted: string): unknown {
  let node: unknown = doc;
  for (const part of dotted.split('.')) {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
