import type { V1ConfigMap, V1Pod, V1Secret } from '@kubernetes/client-node';

/**
 * Reading the ConfigMaps and Secrets a pod refers to: the API cache in API-server mode, files
 * under localObjectsDir standalone. A file of its own so the hooks (and the SDK) can name it
 * without importing the API client.
 */
export interface ObjectSource {
  configMap(namespace: string, name: string): Promise<V1ConfigMap | undefined>;
  secret(namespace: string, name: string): Promise<V1Secret | undefined>;
}

/** What a projection asks for. */
export interface TokenRequestSpec { serviceAccountName: string; audience: string | undefined; expirationSeconds: number }

/** Hands out tokens for projections: TokenManager in API-server mode. */
export interface TokenSource {
  token(pod: V1Pod, spec: TokenRequestSpec): Promise<string>;
}
