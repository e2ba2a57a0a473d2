// A small seeded PRNG (splitmix32 seeding a xorshift128**). Pure: the same
// seed yields the same sequence on every machine, which is what makes a
// simulator seed replay exactly. Production seeds it from the OS.

export type Random = (n: number) => number;

export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next() | 1;
  }

  /** A uniform 32-bit unsigned integer. */
  u32(): number {
    const t = this.s1 << 9;
    let r = Math.imul(this.s1, 5);
    r = Math.imul((r << 7) | (r >>> 25), 9) >>> 0;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = (this.s3 << 11) | (this.s3 >>> 21);
    return r;
  }

  /** A uniform float in [0, 1). */
  float(): number {
    return this.u32() / 4294967296;
  }

  /** A uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  /** A Random function bound to this generator, as the Raft core wants it. */
  asRandom(): Random {
    return (n: number) => this.int(n);
  }
}
