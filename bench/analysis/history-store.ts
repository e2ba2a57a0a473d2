// `npm run bench -- history-store [--rate N (1000)] [--seconds N (10)] [--role leader|follower|both]`
//
// The transaction history's own cost, in one process and without a
// cluster: a HistoryStore (src/history/store.ts) fed at a steady rate what
// one node's history sees of a two-participant transaction under parallel
// commit, as the node process feeds it (src/node/history-feed.ts): on the
// leader its sightings (begin, PREPARE ×2, vote ×2, proposed, DECISION
// sent ×2, ACK ×2) around the applied decision, on every node the decision
// and, about 300 ms later, the Forget. It prints the process's CPU per
// transaction (user + system, LevelDB's threads included) with the store
// and without it (the same feed, no store), LevelDB writes and bytes written
// per transaction, the records' bytes per transaction, and the heap bytes
// allocated and GC pause per transaction (V8's GC profiler). Unlike
// throughput on a shared machine, these figures barely move with the load.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { GCProfiler, type GCProfilerResult, getHeapStatistics } from 'node:v8';
import { join } from 'node:path';
import type { HistoryChange } from '../../src/history/record.ts';
import { HistoryStore } from '../../src/history/store.ts';

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

interface Figures {
  cpuMsPerTxn: number;
  /** Of it, on the main thread (the node's event loop), with the feed's own. */
  mainCpuMsPerTxn: number;
  writesPerTxn: number;
  batchOpsPerTxn: number;
  bytesWrittenPerTxn: number;
  recordBytesPerTxn: number;
  /**
   * Heap bytes allocated per transaction, the feed's own taken out, and GC pause per transaction (V8's GC profiler).
   */
  allocBytesPerTxn: number;
  gcMsPerTxn: number;
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

type Sink = ((index: number, changes: HistoryChange[]) => void) | null;
/** A sighting, as the node process hands it over (src/node/history-feed.ts historyRow). */
type Seen = ((txnId: string, atMs: number, kind: string, participantId: string, detail: string) => void) | null;

/** Feeds `sink` RATE transactions a second for SECONDS; returns the CPU it took in ms and how many transactions. */
async function feed(
  sink: Sink,
  seen: Seen,
  leader: boolean,
  onEntry: (index: number) => void,
): Promise<{ cpuMs: number; mainMs: number; txns: number; allocBytes: number; gcMs: number }> {
  const perTick = (RATE * TICK_MS) / 1000;
  let index = 0;
  let started = 0;
  let carry = 0;
  const forgets: string[][] = [];
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const th0 = threadCpuMs();
  const heap0 = getHeapStatistics().used_heap_size;
  const gc = new GCProfiler();
  gc.start();
  const end = t0 + SECONDS * 1000;
  let tick = 0;
  while (performance.now() < end) {
    const nowMs = Date.now();
    carry += perTick;
    const ids: string[] = [];
    for (; carry >= 1; carry--) ids.push(`t-${started++}-0190a3c4-5d6e-7f80-9a1b-2c3d4e5f6071`);
    const row = (txnId: string, kind: string, participantId = '', detail = ''): void =>
      seen?.(txnId, nowMs, kind, participantId, detail);
    if (leader)
      for (const id of ids) {
        row(id, 'begin');
        for (const p of PARTICIPANTS) row(id, 'prepare', p);
      }
    // The STAGE entry (parallel commit), the votes, the decision proposed and applied in one entry, DECISIONs sent,
    // ACKs.
    onEntry(++index);
    if (leader)
      for (const id of ids) {
        for (const p of PARTICIPANTS) row(id, 'vote', p, 'YES');
        row(id, 'proposed', '', 'COMMIT');
      }
    const decideAt = ++index;
    onEntry(decideAt);
    sink?.(
      decideAt,
      ids.map((txnId) => ({
        t: 'decide',
        txnId,
        outcome: 'commit',
        reason: '',
        participants: PARTICIPANTS,
        index: decideAt,
        atMs: nowMs,
        first: true,
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
      onEntry(at);
      sink?.(
        at,
        f.map((txnId) => ({ t: 'forget', txnId, index: at, atMs: nowMs })),
      );
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

async function measure(leader: boolean): Promise<Figures & { baseCpuMsPerTxn: number; baseMainCpuMsPerTxn: number }> {
  const base = await feed(null, null, leader, () => {});
  const dir = mkdtempSync(join(tmpdir(), 'verdict-history-store-'));
  try {
    const store = await HistoryStore.open(dir, {
      retentionMs: 7 * 86_400_000,
      bytesMax: 1024 ** 4,
      nowMs: () => Date.now(),
      decided: () => false,
      onError: (err, what) => process.stderr.write(`history ${what}: ${err.message}\n`),
    });
    const r = await feed(
      (index, changes) => store.apply(index, changes),
      (txnId, atMs, kind, participantId, detail) => store.sighting(txnId, atMs, kind, participantId, detail),
      leader,
      (index) => store.apply(index, []),
    );
    const cpu0 = process.cpuUsage();
    await store.flush();
    const c = process.cpuUsage(cpu0);
    const w = store.writeStats();
    const bytes = (await store.query({ limit: 1 })).bytes;
    await store.close();
    return {
      cpuMsPerTxn: (r.cpuMs + (c.user + c.system) / 1000) / r.txns,
      baseCpuMsPerTxn: base.cpuMs / base.txns,
      mainCpuMsPerTxn: r.mainMs / r.txns,
      baseMainCpuMsPerTxn: base.mainMs / base.txns,
      writesPerTxn: w.records / r.txns,
      batchOpsPerTxn: w.ops / r.txns,
      bytesWrittenPerTxn: w.bytes / r.txns,
      recordBytesPerTxn: bytes / r.txns,
      allocBytesPerTxn: r.allocBytes / r.txns - base.allocBytes / base.txns,
      gcMsPerTxn: r.gcMs / r.txns - base.gcMs / base.txns,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;
const out: Record<string, unknown> = { rate: RATE, seconds: SECONDS };
for (const role of ROLE === 'both' ? ['leader', 'follower'] : [ROLE]) {
  const f = await measure(role === 'leader');
  const cost = f.cpuMsPerTxn - f.baseCpuMsPerTxn;
  process.stderr.write(
    `${role}: ${r3(cost)} ms CPU / txn for the history, ${r3(f.mainCpuMsPerTxn - f.baseMainCpuMsPerTxn)} of it on the main thread (${r3(f.cpuMsPerTxn)} with it, ${r3(f.baseCpuMsPerTxn)} the feed alone); ${r3(f.writesPerTxn)} record writes, ${r3(f.batchOpsPerTxn)} LevelDB ops and ${Math.round(f.bytesWrittenPerTxn)} bytes written per txn; ${Math.round(f.recordBytesPerTxn)} bytes of records per txn kept; ${Math.round(f.allocBytesPerTxn)} bytes allocated and ${r3(f.gcMsPerTxn * 1000)} µs of GC per txn (load average ${loadavg()[0].toFixed(2)})\n`,
  );
  out[role] = { historyCpuMsPerTxn: r3(cost), ...Object.fromEntries(Object.entries(f).map(([k, v]) => [k, r3(v)])) };
}
out.loadAvg = r3(loadavg()[0]);
process.stdout.write(`${JSON.stringify(out)}\n`);
