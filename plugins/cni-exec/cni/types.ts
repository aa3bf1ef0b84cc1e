/**
 * The shapes of the CNI protocol (containernetworking/cni SPEC.md) that the runtime reads
 * and writes. Results are kept as plain JSON objects: plugins may add fields we do not know,
 * and those must reach the next plugin (`prevResult`) and the caller unchanged.
 */

/** One plugin's configuration inside a network configuration list. */
export interface PluginConf {
  type: string;
  /** Capabilities the plugin accepts in `runtimeConfig` (`portMappings`, `bandwidth`, `ips`, ...). */
  capabilities?: Record<string, boolean>;
  [key: string]: unknown;
}

/** A network configuration list (`.conflist`), or a single `.conf` wrapped as a list of one. */
export interface NetworkConfigList {
  cniVersion: string;
  name: string;
  disableCheck?: boolean;
  plugins: PluginConf[];
  /** The file it was loaded from (for messages), if any. */
  file?: string;
}

export interface CniInterface { name: string; mac?: string; sandbox?: string; mtu?: number; [key: string]: unknown }
export interface CniIP { address: string; gateway?: string; interface?: number; version?: string; [key: string]: unknown }
export interface CniRoute { dst: string; gw?: string; [key: string]: unknown }

/** An ADD result (spec 0.3.0 and later; older results are converted on arrival). */
export interface CniResult {
  cniVersion: string;
  interfaces?: CniInterface[];
  ips?: CniIP[];
  routes?: CniRoute[];
  dns?: { nameservers?: string[]; domain?: string; search?: string[]; options?: string[] };
  [key: string]: unknown;
}

/** The CNI error object a plugin prints on failure (and the runtime returns to its caller). */
export interface CniErrorBody { cniVersion?: string; code: number; msg: string; details?: string }

export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION';

/** What the runtime needs to know about one attachment (libcni's RuntimeConf). */
export interface RuntimeConf {
  /** `CNI_CONTAINERID`: for pods, the sandbox id. */
  containerId: string;
  /** `CNI_NETNS`: the network namespace path; may be empty for DEL. */
  netns: string;
  /** `CNI_IFNAME`: the interface to create inside the namespace. */
  ifName: string;
  /** `CNI_ARGS` as key/value pairs, in order. */
  args: Array<[string, string]>;
  /** Values for the `runtimeConfig` capabilities plugins declare (`portMappings`, `bandwidth`, `ips`). */
  capabilityArgs: Record<string, unknown>;
}

/** The well-known error codes of the spec (0-99 are reserved to it). */
export const CNI_ERR = Object.freeze({
  INCOMPATIBLE_VERSION: 1,
  UNSUPPORTED_FIELD: 2,
  UNKNOWN_CONTAINER: 3,
  INVALID_ENV: 4,
  IO_FAILURE: 5,
  DECODE_FAILURE: 6,
  INVALID_NETWORK_CONFIG: 7,
  TRY_AGAIN_LATER: 11,
  /** kubelet-ts: a plugin misbehaved (printed no valid answer, hung, was killed). */
  PLUGIN_MISBEHAVED: 100,
  /** kubelet-ts: the runtime could not resolve the pod the request is for. */
  UNKNOWN_POD: 101,
  /** kubelet-ts: a tap of a cni-exec hook failed. */
  HOOK_FAILED: 102,
});
