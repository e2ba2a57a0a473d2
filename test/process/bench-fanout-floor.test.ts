// The machine floor from minimal processes (bench/floors/floors.ts fanoutFloor): sixteen
// participant processes, two followers and the fanout process on real files
// and real gRPC, and raft3 once more with a client process of its own.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { fanoutFloor } from '../../bench/floors/floors.ts';

it('measures every pattern, and the raw log write timed at a client process of its own', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-fanout-floor-'));
  try {
    const r = await fanoutFloor(dir, { measureMs: 1_500, fsyncSamplesMax: 0 });
    expect(r.n).toBe(16);
    for (const k of [
      'participants1',
      'participantsN',
      'classic1',
      'classic3',
      'parallel3',
      'raft3',
      'raft3_one_sync',
      'raft3_client',
    ] as const) {
      const s = r[k];
      expect(s, k).toBeDefined();
      expect(s!.count, k).toBeGreaterThan(0);
      // Each holds at least one real fdatasync and one gRPC message: never free.
      expect(s!.p50_us, k).toBeGreaterThan(0);
    }
    // The client process really drove the leader process: many Puts in its 1.5 s window, not one that got through.
    expect(r.raft3_client!.count).toBeGreaterThan(10);
    // The leader's files are gone; only the participants' and followers' remain.
    expect(readdirSync(dir).filter((f) => f.startsWith('fan-leader-'))).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
