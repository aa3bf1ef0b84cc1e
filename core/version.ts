/**
 * The versions the node reports. `status.nodeInfo.kubeletVersion` is read as a semantic
 * version with a 'v' prefix by the API server, the controllers and kubectl (version-skew
 * checks, `kubectl get nodes`). kubelet-ts reports the upstream release whose kubelet
 * behaviour and API contracts it implements and is tested against (v1.28.7), with its own
 * version as semver build metadata: `v1.28.7+kubelet-ts.0.1.0`. Build metadata does not take
 * part in version precedence, so every check compares it as v1.28.7 (a pre-release suffix,
 * `v1.28.7-kubelet-ts`, would sort below v1.28.7 and fail `>= v1.28.7` checks); distributions
 * report their builds the same way (k3s: `v1.28.7+k3s1`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from './util/package-root.ts';

/** The upstream Kubernetes release whose kubelet contract kubelet-ts follows. */
export const KUBERNETES_COMPAT_VERSION = 'v1.28.7';

function packageVersion(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
    if (typeof pkg.version === 'string' && /^[0-9A-Za-z.-]+$/.test(pkg.version)) return pkg.version;
  } catch {
    // fall through
  }
  return '0.0.0';
}

/** kubelet-ts's own version (package.json). */
export const KUBELET_TS_VERSION = packageVersion();

/** `status.nodeInfo.kubeletVersion` (and kubeProxyVersion, as upstream fills it). */
export const KUBELET_VERSION = `${KUBERNETES_COMPAT_VERSION}+kubelet-ts.${KUBELET_TS_VERSION}`;
