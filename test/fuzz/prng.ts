/**
 * The fuzz suite's deterministic random numbers: a small PRNG of our own (xorshift32 mixed
 * with a splitmix step), so a seed reproduces exactly the same cases on any machine and
 * Node version. Each case has its own generator, derived from the run's seed and the case's
 * index, so one failing case can be regenerated alone.
 */

/** The run's seed and case count, from KUBELET_TS_FUZZ_SEED and KUBELET_TS_FUZZ_COUNT. */
export function fuzzSettings(defaultCount: number): { seed: number; count: number } {
  const seedText = process.env.KUBELET_TS_FUZZ_SEED;
  const countText = process.env.KUBELET_TS_FUZZ_COUNT;
  const seed = seedText === undefined || seedText === '' ? 0x6b75_6265 : Number(seedText);
  const count = countText === undefined || countText === '' ? defaultCount : Number(countText);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) throw new Error(`KUBELET_TS_FUZZ_SEED must be an integer between 0 and 4294967295, got ${seedText}`);
  if (!Number.isInteger(count) || count < 1 || count > 1_000_000) throw new Error(`KUBELET_TS_FUZZ_COUNT must be an integer between 1 and 1000000, got ${countText}`);
  return { seed, count };
}

/** How to run one case again, for failure messages. */
export function reproduceHint(seed: number, file: string): string {
  return `reproduce with KUBELET_TS_FUZZ_SEED=${seed} npx mocha ${file}`;
}

export class Rng {
  private state: number;

  constructor(seed: number, stream = 0) {
    // splitmix32 of seed and stream: nearby seeds and case indexes give unrelated states.
    let z = (seed ^ Math.imul(stream + 1, 0x9e37_79b9)) >>> 0;
    z = Math.imul(z ^ (z >>> 16), 0x85eb_ca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2_ae35) >>> 0;
    z = (z ^ (z >>> 16)) >>> 0;
    this.state = z === 0 ? 0x1234_5678 : z;
  }

  /** A uint32 (xorshift32). */
  next(): number {
    let x = this.state;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    this.state = x;
    return x;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + (this.next() % (hi - lo + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }

  chance(p: number): boolean {
    return this.next() / 0x1_0000_0000 < p;
  }

  bytes(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = this.next() & 0xff;
    return b;
  }
}
