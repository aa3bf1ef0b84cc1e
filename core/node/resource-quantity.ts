/**
 * Exact resource quantities for node capacity and allocatable, written the way apimachinery's
 * resource.Quantity writes them, so the Node reads as upstream's does (`memory: 3948464Ki`,
 * `cpu: 1500m`, `ephemeral-storage: 16999863064`). Values are held as integers of milli-units
 * (bigint): bytes of a large disk and fractions of a CPU stay exact through the subtractions
 * of node allocatable, where floating point would drift.
 */

/** apimachinery's two formats: binary suffixes (Ki, Mi) for bytes, decimal ones (m, k, M) otherwise. */
export type QuantityFormat = 'BinarySI' | 'DecimalSI';

/** An exact quantity: `milli` thousandths of the unit, and how to write it. */
export interface Quantity { milli: bigint; format: QuantityFormat }

const BINARY: Record<string, bigint> = { Ki: 1n << 10n, Mi: 1n << 20n, Gi: 1n << 30n, Ti: 1n << 40n, Pi: 1n << 50n, Ei: 1n << 60n };
const DECIMAL_EXP: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([KMGTPE]i)|([numkMGTPE])|[eE]([+-]?\d+))?$/;

/**
 * Parses a quantity ('100Mi', '1.5', '500m', '1e3', '10G') exactly. Digits below a milli-unit
 * are rounded up, as Quantity rounds. Throws on anything that is not a quantity.
 */
export function parseQuantity(text: string): Quantity {
  const m = QUANTITY.exec(text.trim());
  if (!m) throw new Error(`invalid quantity ${JSON.stringify(text)}`);
  const [, sign, num, bin, dec, exp] = m;
  const [int = '0', frac = ''] = num!.split('.');
  // value = digits × 10^-frac.length × multiplier; milli = value × 1000
  const digits = BigInt(`${int}${frac}` || '0');
  let scale = -frac.length + 3; // power of ten applied to `digits` to get milli-units
  let multiplier = 1n;
  if (bin) multiplier = BINARY[bin]!;
  else if (dec !== undefined) scale += DECIMAL_EXP[dec]!;
  else if (exp !== undefined) scale += Number(exp);
  let milli = digits * multiplier;
  if (scale >= 0) milli *= 10n ** BigInt(scale);
  else {
    const div = 10n ** BigInt(-scale);
    milli = milli / div + (milli % div === 0n ? 0n : 1n);
  }
  if (sign === '-') milli = -milli;
  return { milli, format: bin ? 'BinarySI' : 'DecimalSI' };
}

/** A quantity of whole units (bytes, pods, cores). */
export function quantityOf(units: number | bigint, format: QuantityFormat): Quantity {
  return { milli: BigInt(units) * 1000n, format };
}

/** A quantity of milli-units (CPU). */
export function milliQuantity(milli: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
  return { milli: BigInt(milli), format };
}

/** The value in whole units, rounded up (Quantity.Value()). */
export function quantityValue(q: Quantity): bigint {
  const whole = q.milli / 1000n;
  return q.milli > 0n && q.milli % 1000n !== 0n ? whole + 1n : whole;
}

const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_SUFFIXES: Array<[number, string]> = [[18, 'E'], [15, 'P'], [12, 'T'], [9, 'G'], [6, 'M'], [3, 'k'], [0, ''], [-3, 'm']];

/**
 * Writes a quantity in apimachinery's canonical form: BinarySI integers of magnitude >= 1024
 * with the largest binary suffix that divides them ('3948464Ki', '1Gi', or plain bytes when
 * 1024 does not divide), everything else as DecimalSI with the largest exponent (a multiple of
 * 3) that keeps an integer mantissa ('1500m', '2', '110', '1k').
 */
export function formatQuantity(q: Quantity): string {
  const { milli } = q;
  const sign = milli < 0n ? '-' : '';
  const abs = milli < 0n ? -milli : milli;
  if (q.format === 'BinarySI' && abs % 1000n === 0n && abs >= 1024n * 1000n) {
    let n = abs / 1000n;
    let i = 0;
    while (i < BINARY_SUFFIXES.length - 1 && n % 1024n === 0n) {
      n /= 1024n;
      i++;
    }
    return `${sign}${n}${BINARY_SUFFIXES[i]}`;
  }
  if (abs === 0n) return '0';
  for (const [exp, suffix] of DECIMAL_SUFFIXES) {
    const div = 10n ** BigInt(exp + 3);
    if (abs % div === 0n) return `${sign}${abs / div}${suffix}`;
  }
  return `${sign}${abs}m`;
}

/** a − b, keeping a's format (Quantity.Sub). */
export function subtract(a: Quantity, b: Quantity): Quantity {
  return { milli: a.milli - b.milli, format: a.format };
}

/** a + b, keeping a's format (Quantity.Add). */
export function add(a: Quantity, b: Quantity): Quantity {
  return { milli: a.milli + b.milli, format: a.format };
}
