// `npm run bench -- store-sync [--batches 400] [--rounds 4]`
//
// The syncs of one batch, measured at the store: one follower-sized batch
// (one 100-byte entry and its hard state) persisted at a time, as a node does
// at one request in flight, through src/storage/store.ts with the mark
// written beside the segment's fdatasync (`markBesideSegment`, off by
// default) and after it (the default); the default again with a segment
// that grows with every batch (`preallocBytes: 0`, as before the segment
// was extended with zeros ahead of its records); and the floors, a bare
// 200-byte write + fdatasync appended to a file and written over zeros the
// file already has. The five alternate in short rounds in one process on the
// same disk, so a loaded machine affects them alike. Prints one JSON line:
// p50/p99 per persist in microseconds, the per-round p50s, and the load average.
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { EntryType } from '../../src/raft/types.ts';
import { DiskLogStore } from '../../src/storage/store.ts';
import type { PersistBatch } from '../../src/storage/types.ts';
import { newHistogram, recordMs, summarize, type Histogram } from '../harness/hist.ts';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0)
    throw new Error(`--${name} needs a positive integer, not ${process.argv[i + 1] ?? '(nothing)'}`);
  return v;
}

const BATCHES = flag('batches', 400);
const ROUNDS = flag('rounds', 4);
const ID = { clusterId: 'bench', nodeId: 'n1' };

const VARIANTS = ['beside', 'after', 'growing', 'fsync', 'fsyncOverwrite'] as const;
type Variant = (typeof VARIANTS)[number];
type StoreVariant = Exclude<Variant, 'fsync' | 'fsyncOverwrite'>;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-store-sync-'));
  const loadStart = loadavg()[0];
  const hists = Object.fromEntries(VARIANTS.map((v) => [v, newHistogram()])) as Record<Variant, Histogram>;
  const rounds = Object.fromEntries(VARIANTS.map((v) => [v, []])) as unknown as Record<Variant, number[]>;
  try {
    const stores: Record<StoreVariant, DiskLogStore> = {
      beside: (await DiskLogStore.open(join(dir, 'beside'), ID, { markBesideSegment: true })).store,
      after: (await DiskLogStore.open(join(dir, 'after'), ID)).store,
      growing: (await DiskLogStore.open(join(dir, 'growing'), ID, { preallocBytes: 0 })).store,
    };
    const next: Record<StoreVariant, number> = { beside: 1, after: 1, growing: 1 };
    const fd = openSync(join(dir, 'floor.dat'), 'a');
    const payload = Buffer.alloc(200, 0x62);
    // The overwrite floor's file: zeros written and synced first, then written over in place.
    const fdOver = openSync(join(dir, 'floor-over.dat'), 'w');
    const overBytes = payload.byteLength * BATCHES * ROUNDS;
    writeSync(fdOver, Buffer.alloc(overBytes), 0, overBytes, 0);
    fdatasyncSync(fdOver);
    let overAt = 0;
    try {
      for (let r = 0; r < ROUNDS; r++) {
        for (const v of VARIANTS) {
          const h = newHistogram();
          for (let i = 0; i < BATCHES; i++) {
            const t0 = performance.now();
            if (v === 'fsync') {
              writeSync(fd, payload);
              fdatasyncSync(fd);
            } else if (v === 'fsyncOverwrite') {
              writeSync(fdOver, payload, 0, payload.byteLength, overAt);
              overAt += payload.byteLength;
              fdatasyncSync(fdOver);
            } else {
              await persist(stores[v], next[v]++);
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
      closeSync(fdOver);
      for (const st of Object.values(stores)) await st.close();
    }
    const out = {
      batches: BATCHES,
      rounds: ROUNDS,
      loadAvgStart: loadStart,
      loadAvgEnd: loadavg()[0],
      mark_beside_segment: summarize(hists.beside),
      mark_after_segment: summarize(hists.after),
      mark_after_growing_segment: summarize(hists.growing),
      fsync_200B: summarize(hists.fsync),
      fsync_200B_overwrite: summarize(hists.fsyncOverwrite),
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
