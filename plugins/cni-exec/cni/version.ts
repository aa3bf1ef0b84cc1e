import { CniError } from './errors.ts';
import { CNI_ERR, type CniIP, type CniResult } from './types.ts';

/** Spec versions whose results this runtime reads and writes (0.1.0/0.2.0 results are read only). */
export const RESULT_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] as const;

/** Compares two `x.y.z` versions. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * The version to speak to one plugin of a network: the network's own if the plugin supports
 * it, else the highest version both sides can convert results between that does not exceed
 * the network's (a 0.4.0-only plugin in a 1.0.0 list is called with 0.4.0, its prevResult
 * converted down and its result converted back up). No common version: error code 1.
 */
export function negotiateVersion(networkVersion: string, supported: readonly string[], where: { network: string; plugin: string }): string {
  if (supported.includes(networkVersion)) return networkVersion;
  const common = RESULT_VERSIONS.filter((v) => supported.includes(v) && compareVersions(v, networkVersion) <= 0);
  const best = common[common.length - 1];
  if (best) return best;
  throw new CniError(
    { code: CNI_ERR.INCOMPATIBLE_VERSION, msg: `incompatible CNI versions: the network asks for ${networkVersion}, the plugin supports ${supported.join(', ') || 'none'}` },
    { ...where, command: 'VERSION' },
  );
}

/** True if the spec version has CHECK and prevResult on DEL (0.4.0 and later). */
export const hasCheck = (version: string) => compareVersions(version, '0.4.0') >= 0;

/**
 * Converts a result to another spec version, as libcni's `GetAsVersion` does: 0.3.x/0.4.0
 * results carry `version` ("4"/"6") on each IP, 1.0.0 results do not; 0.1.0/0.2.0 results
 * (`ip4`/`ip6` objects) are lifted to the current shape. Unknown fields are kept.
 */
export function convertResult(result: Record<string, unknown>, to: string): CniResult {
  const from = typeof result.cniVersion === 'string' ? result.cniVersion : '0.1.0';
  let r: CniResult;
  if (compareVersions(from, '0.3.0') < 0) {
    r = liftLegacy(result, from);
  } else {
    r = { ...(result as CniResult) };
  }
  if (!(RESULT_VERSIONS as readonly string[]).includes(to)) {
    throw new CniError({ code: CNI_ERR.INCOMPATIBLE_VERSION, msg: `cannot convert a result to CNI version ${to} (supported: ${RESULT_VERSIONS.join(', ')})` });
  }
  const ips = (r.ips ?? []).map((ip): CniIP => {
    const { version: _v, ...rest } = ip;
    return to === '1.0.0' ? rest : { ...rest, version: ip.address.includes(':') ? '6' : '4' };
  });
  return { ...r, cniVersion: to, ...(r.ips ? { ips } : {}) };
}

function liftLegacy(result: Record<string, unknown>, from: string): CniResult {
  const ips: CniIP[] = [];
  const routes: Array<{ dst: string; gw?: string }> = [];
  for (const key of ['ip4', 'ip6']) {
    const cfg = result[key] as { ip?: string; gateway?: string; routes?: Array<{ dst: string; gw?: string }> } | undefined;
    if (!cfg?.ip) continue;
    ips.push({ address: cfg.ip, ...(cfg.gateway ? { gateway: cfg.gateway } : {}) });
    routes.push(...(cfg.routes ?? []));
  }
  if (!ips.length) throw new CniError({ code: CNI_ERR.DECODE_FAILURE, msg: `a CNI ${from} result without ip4 or ip6` });
  const dns = result.dns as CniResult['dns'] | undefined;
  return { cniVersion: from, ips, ...(routes.length ? { routes } : {}), ...(dns ? { dns } : {}) };
}

/** The IP addresses (without prefix length) of the result that belong to interface `ifName` inside the sandbox. */
export function resultIPs(result: CniResult | undefined, ifName = 'eth0'): string[] {
  if (!result?.ips) return [];
  const idx = (result.interfaces ?? []).findIndex((i) => i.name === ifName && i.sandbox);
  return result.ips
    .filter((ip) => idx < 0 || ip.interface === idx)
    .map((ip) => ip.address.split('/')[0]!)
    .filter(Boolean);
}
