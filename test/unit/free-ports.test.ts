// Test ports (test/free-ports.ts): below the kernel's ephemeral range, each
// vitest worker in a slice of its own, and never the same port twice in one
// process, so a port a test holds unbound stays its own.
import { describe, expect, it } from 'vitest';
import { ephemeralLow, freePorts, PORT_LOW, portRange } from '../free-ports.ts';

describe('free test ports', () => {
  it('gives each vitest worker a slice of its own below the ephemeral range, and the whole of it outside vitest', () => {
    expect(portRange({}, 32_768)).toEqual([PORT_LOW, 32_768]);
    const one = portRange({ VITEST_POOL_ID: '1' }, 32_768);
    const two = portRange({ VITEST_POOL_ID: '2' }, 32_768);
    expect(one[0]).toBe(PORT_LOW);
    expect(two[0]).toBe(one[1]);
    expect(two[1]).toBeLessThanOrEqual(32_768);
    expect(one[1] - one[0]).toBeGreaterThan(2_000);
    expect(portRange({ VITEST_POOL_ID: '9' }, 32_768)).toEqual(one);
    // Another run on the same machine moves to other slices.
    expect(portRange({ VITEST_POOL_ID: '1', VERDICT_PORT_SLICE: '1' }, 32_768)).toEqual(two);
    expect(portRange({ VITEST_POOL_ID: '1', VERDICT_PORT_SLICE: '3' }, 32_768)[0]).toBeGreaterThanOrEqual(two[1]);
  });

  it('hands out different free ports inside its range, never the same one twice', async () => {
    const [low, high] = portRange();
    expect(high).toBeLessThanOrEqual(ephemeralLow());
    const a = await freePorts(20);
    const b = await freePorts(20);
    const all = [...a, ...b];
    expect(new Set(all).size).toBe(40);
    for (const p of all) {
      expect(p).toBeGreaterThanOrEqual(low);
      expect(p).toBeLessThan(high);
    }
  });
});
