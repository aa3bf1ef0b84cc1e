/**
 * Kubernetes resource quantities ("100m", "1.5", "128Mi", "1G", "1e3"). The kubelet
 * needs CPU in millicores and memory in bytes to build the runtime's resources.
 */
const SUFFIX: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};
const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;

/** Parses a quantity to a plain number of base units; throws on malformed input. */
export function parseQuantity(q: string | number): number {
  if (typeof q === 'number') return q;
  const m = QUANTITY.exec(q.trim());
  if (!m) throw new Error(`invalid quantity '${q}'`);
  const base = Number(m[1]);
  if (m[2]) return base * 10 ** Number(m[2].slice(1));
  return base * SUFFIX[m[3] ?? '']!;
}

/** CPU quantity → millicores, rounded up as upstream does. */
export function milliCPU(q: string | number): number {
  return Math.ceil(parseQuantity(q) * 1000 - 1e-9);
}

/** Memory quantity → bytes. */
export function bytes(q: string | number): number {
  return Math.ceil(parseQuantity(q) - 1e-9);
}
