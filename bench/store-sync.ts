// `npx tsx bench/store-sync.ts [--batches 400] [--rounds 4]`
//
// The second sync per batch, measured at the store: one follower-sized batch
// (one 100-byte entry and its hard state) persisted at a time, as a node does
// at one request in flight, through src/storage/store.ts with the mark
// written beside the segment's fdatasync (the two-field mark) and after it
// (the order before), and a bare 200-byte append + fdatasync (the floor).
// The three alternate in short rounds in one process on the same disk, so a
// loaded machine affects them alike. Prints one JSON line: p50/p99 per
// persist in microseconds, the per-round p50s, and the load average.
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { EntryType } from '../src/raft/types.ts';
import { DiskLogStore } from '../src/storage/store.ts';
import type { PersistBatch } from '../src/storage/types.ts';
import { newHistogram, recordMs, summarize, type Histogram } from './hist.ts';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${name} needs a positive integer, not ${process.argv[i + 1] ?? '(nothing)'}`);
  return v;
}

const BATCHES = flag('batches', 400);
const ROUNDS = flag('rounds', 4);
const ID = { clusterId: 'bench', nodeId: 'n1' };

type Variant = 'beside' | 'after' | 'fsync';

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-store-sync-'));
  const loadStart = loadavg()[0];
  const hists: Record<Variant, Histogram> = { beside: newHistogram(), after: newHistogram(), fsync: newHistogram() };
  const rounds: Record<Variant, number[]> = { beside: [], after: [], fsync: [] };
  try {
    const beside = (await DiskLogStore.open(join(dir, 'beside'), ID)).store;
    const after = (await DiskLogStore.open(join(dir, 'after'), ID, { markAfterSegment: true })).store;
    const next: Record<'beside' | 'after', number> = { beside: 1, after: 1 };
    const fd = openSync(join(dir, 'floor.dat'), 'a');
    const payload = Buffer.alloc(200, 0x62);
    try {
      for (let r = 0; r < ROUNDS; r++) {
        for (const v of ['beside', 'after', 'fsync'] as const) {
          const h = newHistogram();
          for (let i = 0; i < BATCHES; i++) {
            const t0 = performance.now();
            if (v === 'fsync') {
              writeSync(fd, payload);
              fdatasyncSync(fd);
            } else {
              const index = next[v]++;
              await persist(v === 'beside' ? beside : after, index);
            }
            const ms = performance.now() - t0;
            recordMs(h, ms);
            recordMs(hists[v], ms);
          }
          rounds[v].push(summarize(h).p50_us);
        }
      }
    } finally {
      closeSync(fd);
      await beside.close();
      await after.close();
    }
    const out = {
      batches: BATCHES,
      rounds: ROUNDS,
      loadAvgStart: loadStart,
      loadAvgEnd: loadavg()[0],
      mark_beside_segment: summarize(hists.beside),
      mark_after_segment: summarize(hists.after),
      fsync_200B: summarize(hists.fsync),
      round_p50_us: rounds,
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function persist(store: DiskLogStore, index: number): Promise<void> {
  const batch: PersistBatch = {
    hardState: { term: 1, vote: 'n1', commit: index - 1 },
    entries: [{ term: 1, index, type: EntryType.Normal, data: Buffer.alloc(100, index & 0xff) }],
    snapshot: null,
    localSnapshot: null,
    compactTo: 0,
    sync: true,
  };
  return new Promise((resolve, reject) => store.persist(batch, (err) => (err ? reject(err) : resolve())));
}

await main();
