// `npm run bench -- history-store [--rate N (1000)] [--seconds N (10)] [--role leader|follower|both]`
//
// The transaction history's own cost, in one process and without a
// cluster: a HistoryStore (src/history/store.ts) fed at a steady rate what
// one node's history sees of a two-participant transaction under parallel
// commit, as the node process feeds it (src/node/history-feed.ts): on the
// leader its sightings (begin, PREPARE ×2, vote ×2, proposed, DECISION
// sent ×2, ACK ×2) around the applied decision, on every node the decision
// and, about 300 ms later, the Forget: the applied entries with the results
// the node's state machine makes for them, and the leader's timeline rows as
// its watch builds them for the console. It runs three stages in turn: the
// node's own work alone (results and rows built and dropped), the node's
// feed into a store that keeps nothing (the feed's cost), and the feed into
// a real store (the store's cost), and prints each one's CPU per transaction
// over the stage before it (user + system, LevelDB's threads included, and
// the main thread's), heap bytes allocated and GC pause per transaction
// (V8's GC profiler); then LevelDB writes and bytes written per
// transaction and the records' bytes per transaction. Unlike throughput on
// a shared machine, these figures barely move with the load.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { GCProfiler, type GCProfilerResult, getHeapStatistics } from 'node:v8';
import { join } from 'node:path';
import type { ApplyResult } from '../../src/commit/state.ts';
import { HistoryStore } from '../../src/history/store.ts';
import { historyObserver, historyRow } from '../../src/node/history-feed.ts';
import { type Entry, EntryType } from '../../src/raft/types.ts';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};
const RATE = Number(arg('rate', '1000'));
const SECONDS = Number(arg('seconds', '10'));
const ROLE = arg('role', 'both');
if (!(Number.isInteger(RATE) && RATE > 0 && RATE <= 100_000))
  throw new Error('--rate takes transactions per second, 1 to 100000');
if (!(Number.isInteger(SECONDS) && SECONDS > 0 && SECONDS <= 600)) throw new Error('--seconds takes 1 to 600');
if (!['leader', 'follower', 'both'].includes(ROLE)) throw new Error('--role takes leader, follower or both');

const TICK_MS = 5;
const FORGET_AFTER_TICKS = 60;
const PARTICIPANTS = ['shop', 'ledger'];
const EMPTY = new Uint8Array();

interface Figures {
  /** The node's feed (src/node/history-feed.ts) over the node's own work, into a store that keeps nothing. */
  feed: StageFigures;
  /** The store (src/history/store.ts) over the feed: its event-loop work, LevelDB's threads, its allocation. */
  store: StageFigures;
  /** The node's own work the generator stands for (results, timeline rows), per transaction. */
  baseCpuMsPerTxn: number;
  writesPerTxn: number;
  batchOpsPerTxn: number;
  bytesWrittenPerTxn: number;
  recordBytesPerTxn: number;
}

/**
 * CPU ms of this process's main thread and of all its threads (Linux /proc; LevelDB writes and compacts on threads of
 * its own).
 */
function threadCpuMs(): { main: number; all: number } {
  const tick = 10; // USER_HZ 100
  let main = 0;
  let all = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (Number(f[11]) + Number(f[12])) * tick;
    all += ms;
    if (tid === String(process.pid)) main = ms;
  }
  return { main, all };
}

/**
 * Bytes the heap allocated over a run and the GC pauses in it: the growth between collections (each one's heap before,
 * less the previous one's after), plus the growth since the last.
 */
function allocated(heap0: number, r: GCProfilerResult): { allocBytes: number; gcMs: number } {
  let after = heap0;
  let allocBytes = 0;
  let gcMs = 0;
  for (const s of r.statistics) {
    allocBytes += s.beforeGC.heapStatistics.usedHeapSize - after;
    after = s.afterGC.heapStatistics.usedHeapSize;
    gcMs += s.cost / 1000;
  }
  return { allocBytes: allocBytes + getHeapStatistics().used_heap_size - after, gcMs };
}

/** A store that takes what the node's feed hands over and keeps nothing: the feed's own cost, apart from the store. */
const NO_STORE = {
  apply: () => {},
  advance: () => {},
  decided: () => {},
  forgotten: () => {},
  sighting: () => {},
} as unknown as HistoryStore;

/**
 * Feeds RATE transactions a second for `seconds` the way a node does: each tick the applied entries (STAGE, the
 * decision, a Forget ~300 ms later) with the results the node's state machine makes for them, and on the leader its
 * timeline rows, each built as the node's watch builds it for the console. `history` null: built and dropped (the
 * node's own work, which the history does not add). Returns the CPU it took in ms and how many transactions.
 */
async function feed(
  history: HistoryStore | null,
  leader: boolean,
  seconds = SECONDS,
): Promise<{ cpuMs: number; mainMs: number; txns: number; allocBytes: number; gcMs: number }> {
  const observer = history === null ? null : historyObserver(history, 0);
  const timeline = history === null ? null : historyRow(history, 0);
  const perTick = (RATE * TICK_MS) / 1000;
  let index = 0;
  let started = 0;
  let carry = 0;
  const forgets: string[][] = [];
  const entry = (i: number): Entry => ({ term: 1, index: i, type: EntryType.Normal, data: EMPTY });
  const applied = (e: Entry, results: readonly ApplyResult[]): void => {
    observer?.onEntryApplied?.(e, results[0] ?? null);
    for (const r of results) observer?.onResult?.(e, r);
  };
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const th0 = threadCpuMs();
  const heap0 = getHeapStatistics().used_heap_size;
  const gc = new GCProfiler();
  gc.start();
  const end = t0 + seconds * 1000;
  let tick = 0;
  while (performance.now() < end) {
    const nowMs = Date.now();
    carry += perTick;
    const ids: string[] = [];
    for (; carry >= 1; carry--) ids.push(`t-${started++}-0190a3c4-5d6e-7f80-9a1b-2c3d4e5f6071`);
    const row = (txnId: string, kind: string, participantId?: string, detail?: string): void => {
      const e = { atMs: nowMs, kind, ...(participantId ? { participantId } : {}), ...(detail ? { detail } : {}) };
      timeline?.(txnId, e);
    };
    if (leader)
      for (const id of ids) {
        row(id, 'begin');
        for (const p of PARTICIPANTS) row(id, 'prepare', p);
      }
    // The STAGE entry (parallel commit), the votes, the decision proposed and applied in one batch entry, DECISIONs
    // sent, ACKs.
    const stageAt = ++index;
    applied(
      entry(stageAt),
      ids.map((txnId) => ({
        t: 'stage',
        txnId,
        staging: { txnId, participants: PARTICIPANTS, index: stageAt, atMs: nowMs },
        decision: null,
      })),
    );
    if (leader)
      for (const id of ids) {
        for (const p of PARTICIPANTS) row(id, 'vote', p, 'YES');
        row(id, 'proposed', '', 'COMMIT');
      }
    const decideAt = ++index;
    applied(
      entry(decideAt),
      ids.map((txnId) => ({
        t: 'decide',
        decision: {
          txnId,
          outcome: 'commit',
          reason: '',
          participants: PARTICIPANTS,
          index: decideAt,
          decidedAtMs: nowMs,
        },
        first: true,
        resolution: null,
      })),
    );
    if (leader)
      for (const id of ids) {
        for (const p of PARTICIPANTS) row(id, 'decision-sent', p, 'COMMIT');
        for (const p of PARTICIPANTS) row(id, 'ack', p);
      }
    forgets.push(ids);
    if (forgets.length > FORGET_AFTER_TICKS) {
      const f = forgets.shift() ?? [];
      const at = ++index;
      applied(entry(at), [{ t: 'forget', forgotten: f.length, txnIds: f }]);
    }
    tick++;
    const next = t0 + tick * TICK_MS;
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
  const c = process.cpuUsage(cpu0);
  const th = threadCpuMs();
  const { allocBytes, gcMs } = allocated(heap0, gc.stop());
  return { cpuMs: (c.user + c.system) / 1000, mainMs: th.main - th0.main, txns: started, allocBytes, gcMs };
}

interface StageFigures {
  /** CPU per transaction, all threads and the main thread's, over the stage before it. */
  cpuMsPerTxn: number;
  mainCpuMsPerTxn: number;
  allocBytesPerTxn: number;
  gcMsPerTxn: number;
}

/** What `r` adds per transaction over `before`. */
function over(
  r: { cpuMs: number; mainMs: number; txns: number; allocBytes: number; gcMs: number },
  before: { cpuMs: number; mainMs: number; txns: number; allocBytes: number; gcMs: number },
): StageFigures {
  const per = (x: number, n: number): number => x / n;
  return {
    cpuMsPerTxn: per(r.cpuMs, r.txns) - per(before.cpuMs, before.txns),
    mainCpuMsPerTxn: per(r.mainMs, r.txns) - per(before.mainMs, before.txns),
    allocBytesPerTxn: per(r.allocBytes, r.txns) - per(before.allocBytes, before.txns),
    gcMsPerTxn: per(r.gcMs, r.txns) - per(before.gcMs, before.txns),
  };
}

async function measure(leader: boolean): Promise<Figures> {
  // Warmed up first (the stage run first would pay V8's compiling alone), then alone and with the feed.
  await feed(NO_STORE, leader, Math.min(3, SECONDS));
  const base = await feed(null, leader);
  const fed = await feed(NO_STORE, leader);
  const dir = mkdtempSync(join(tmpdir(), 'verdict-history-store-'));
  try {
    const store = await HistoryStore.open(dir, {
      retentionMs: 7 * 86_400_000,
      bytesMax: 1024 ** 4,
      nowMs: () => Date.now(),
      // A row of a transaction the node has decided and the store wrote already goes to its record on disk.
      decided: () => false,
      onError: (err, what) => process.stderr.write(`history ${what}: ${err.message}\n`),
    });
    const r = await feed(store, leader);
    const cpu0 = process.cpuUsage();
    await store.flush();
    const c = process.cpuUsage(cpu0);
    const w = store.writeStats();
    const bytes = (await store.query({ limit: 1 })).bytes;
    await store.close();
    const stored = over({ ...r, cpuMs: r.cpuMs + (c.user + c.system) / 1000 }, fed);
    return {
      feed: over(fed, base),
      store: stored,
      baseCpuMsPerTxn: base.cpuMs / base.txns,
      writesPerTxn: w.records / r.txns,
      batchOpsPerTxn: w.ops / r.txns,
      bytesWrittenPerTxn: w.bytes / r.txns,
      recordBytesPerTxn: bytes / r.txns,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;
const stage = (f: StageFigures): Record<string, number> =>
  Object.fromEntries(Object.entries(f).map(([k, v]) => [k, r3(v)]));
const out: Record<string, unknown> = { rate: RATE, seconds: SECONDS };
for (const role of ROLE === 'both' ? ['leader', 'follower'] : [ROLE]) {
  const f = await measure(role === 'leader');
  const said = (s: StageFigures): string =>
    `${r3(s.cpuMsPerTxn)} ms CPU (${r3(s.mainCpuMsPerTxn)} on the main thread), ${Math.round(s.allocBytesPerTxn)} bytes allocated, ${r3(s.gcMsPerTxn * 1000)} µs of GC`;
  process.stderr.write(
    `${role}, per txn: the feed ${said(f.feed)}; the store ${said(f.store)}; ${r3(f.writesPerTxn)} transactions written, ${r3(f.batchOpsPerTxn)} LevelDB ops and ${Math.round(f.bytesWrittenPerTxn)} bytes written; ${Math.round(f.recordBytesPerTxn)} bytes kept (the generator alone ${r3(f.baseCpuMsPerTxn)} ms; load average ${loadavg()[0].toFixed(2)})\n`,
  );
  out[role] = {
    historyCpuMsPerTxn: r3(f.feed.cpuMsPerTxn + f.store.cpuMsPerTxn),
    feed: stage(f.feed),
    store: stage(f.store),
    baseCpuMsPerTxn: r3(f.baseCpuMsPerTxn),
    writesPerTxn: r3(f.writesPerTxn),
    batchOpsPerTxn: r3(f.batchOpsPerTxn),
    bytesWrittenPerTxn: r3(f.bytesWrittenPerTxn),
    recordBytesPerTxn: r3(f.recordBytesPerTxn),
  };
}
out.loadAvg = r3(loadavg()[0]);
process.stdout.write(`${JSON.stringify(out)}\n`);
