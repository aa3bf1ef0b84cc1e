import { readMachineInfo, type MachineInfo } from '../node/machine-info.ts';
import { quantityValue } from '../objects/quantity.ts';

/** How long one read of the machine serves every node: cAdvisor refreshes its machine info every 5 minutes too. */
const REFRESH_MS = 5 * 60_000;

/** What `--capacity` may set: whole CPUs, memory and ephemeral-storage in bytes. */
export interface HollowCapacity { cpu?: number; memory?: bigint; 'ephemeral-storage'?: bigint }

/**
 * Parses `--capacity cpu=4,memory=16Gi,ephemeral-storage=100Gi` (from the flag's key=value
 * map). Throws an Error naming the entry that is not a quantity or not a known resource.
 */
export function parseHollowCapacity(map: Record<string, string>): HollowCapacity {
  const out: HollowCapacity = {};
  for (const [name, value] of Object.entries(map)) {
    const q = quantityValue(value);
    if (q === undefined || !Number.isFinite(q) || q <= 0) throw new Error(`--capacity ${name}=${value}: not a positive quantity (such as 4, 16Gi, 500G)`);
    if (name === 'cpu') {
      if (!Number.isInteger(q)) throw new Error(`--capacity cpu=${value}: a node's CPUs are whole (as cAdvisor counts them)`);
      out.cpu = q;
    } else if (name === 'memory' || name === 'ephemeral-storage') out[name] = BigInt(Math.floor(q));
    else throw new Error(`--capacity ${name}: not a resource a hollow node has; allowed: cpu, memory, ephemeral-storage`);
  }
  return out;
}

/**
 * The machine every hollow node of the process reports: the host's, read once for all of them
 * (each node reading /proc, /sys and /etc for its status every 10 s is most of an idle hollow
 * node's work) and again every REFRESH_MS, with `--capacity` in place of the host's CPUs,
 * memory and disk. Identifiers (machine ID, boot ID) are the host's: the nodes are one machine.
 */
export function sharedMachineInfo(rootDir: string, capacity: HollowCapacity = {}): () => Promise<MachineInfo> {
  let cached: { at: number; info: Promise<MachineInfo> } | undefined;
  return () => {
    const now = performance.now();
    if (!cached || now - cached.at > REFRESH_MS) {
      const info = readMachineInfo({ rootDir }).then((m) => ({
        ...m,
        ...(capacity.cpu !== undefined ? { numCores: capacity.cpu } : {}),
        ...(capacity.memory !== undefined ? { memoryCapacityBytes: capacity.memory } : {}),
        ...(capacity['ephemeral-storage'] !== undefined ? { rootfsCapacityBytes: capacity['ephemeral-storage'] } : {}),
      }));
      cached = { at: now, info };
      // A failed read is not kept: the next node asks again.
      info.catch(() => {
        if (cached?.info === info) cached = undefined;
      });
    }
    return cached.info;
  };
}
