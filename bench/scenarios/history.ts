// What the transaction history costs (docs/operations.md, "Transaction
// history"): commit throughput and p50 on three nodes with two memory
// participants, with the history on and off ("history": false, through the
// VERDICT_HISTORY variable the node processes inherit), in alternating
// rounds on fresh clusters so a drift of the machine's load falls on both;
// and the bytes per transaction it keeps on disk (the store's own count and
// the history directory's size on disk, both over the transactions run).
//
//   npm run bench -- history [--quick] [--rounds N]     prints the figures as JSON
// (a tool of bench/cli.ts).

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { VerdictClient } from '../../src/client/client.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import { BenchCluster, stopAll } from '../harness/procs.ts';

export interface HistoryFigures {
  tps_on: number;
  tps_off: number;
  p50_ms_on: number;
  p50_ms_off: number;
  /** (on - off) / off, in percent: negative is a cost. */
  tps_change_pct: number;
  p50_change_pct: number;
  /** The store's own count of its records' bytes, over the transactions it holds. */
  bytes_per_txn_records: number;
  /** du of <dataDir>/history over the transactions it holds (LevelDB's files, compressed, with its log and slack). */
  bytes_per_txn_disk: number;
  /**
   * Each round's commits per second, in the order run: a spread wider than the difference says the machine was too busy
   * to tell.
   */
  tps_rounds: { history: boolean; tps: number }[];
  concurrency: number;
  rounds: number;
  window_ms: number;
}

const CONCURRENCY = 16;
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const r2 = (x: number): number => Math.round(x * 100) / 100;

interface Round {
  tps: number;
  lat: number[];
  txns: number;
  recordBytes: number;
  diskBytes: number;
}

async function round(dir: string, on: boolean, windowMs: number): Promise<Round> {
  // The node processes inherit the environment: VERDICT_HISTORY overrides the config's "history".
  const before = process.env.VERDICT_HISTORY;
  process.env.VERDICT_HISTORY = on ? 'true' : 'false';
  let cluster: BenchCluster;
  try {
    cluster = await BenchCluster.start(join(dir, 'nodes'), 3, on ? 'hist-on' : 'hist-off');
  } finally {
    if (before === undefined) delete process.env.VERDICT_HISTORY;
    else process.env.VERDICT_HISTORY = before;
  }
  const client = new VerdictClient({ insecure: true, endpoints: cluster.endpoints });
  try {
    await cluster.startParticipants(['shop', 'ledger']);
    let n = 0;
    const one = async (): Promise<number> => {
      const t0 = performance.now();
      const tx = await client.begin({});
      tx.enlist('shop', `{"set":{"k${n}":"v"}}`);
      tx.enlist('ledger', `{"set":{"k${n++}":"v"}}`);
      await tx.commit();
      return performance.now() - t0;
    };
    const loop = async (until: number, lat: number[]): Promise<void> => {
      while (performance.now() < until) lat.push(await one());
    };
    await Promise.all(
      Array.from({ length: CONCURRENCY }, () => loop(performance.now() + Math.min(3_000, windowMs / 3), [])),
    );
    const lat: number[] = [];
    const t0 = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, () => loop(t0 + windowMs, lat)));
    const elapsedMs = performance.now() - t0;
    let recordBytes = 0;
    let diskBytes = 0;
    if (on) {
      // A follower's history: what every node keeps (the leader adds its sightings).
      let at = 1;
      for (const i of [1, 2]) {
        const probe = new RaftNodeClient(cluster.endpoints[i] ?? '');
        try {
          if ((await probe.status(5_000)).role !== 'leader') {
            at = i;
            break;
          }
        } finally {
          probe.close();
        }
      }
      const api = new RaftNodeClient(cluster.endpoints[at] ?? '');
      try {
        await new Promise((r) => setTimeout(r, 1_000));
        // The query writes what is pending first.
        recordBytes = (await api.history({ limit: 1 }, 10_000)).bytes;
      } finally {
        api.close();
      }
      diskBytes = Number(
        execFileSync('du', ['-sb', join(dir, 'nodes', `data-n${at + 1}`, 'history')], { encoding: 'utf8' }).split(
          '\t',
        )[0],
      );
    }
    return { tps: lat.length / (elapsedMs / 1000), lat, txns: n, recordBytes, diskBytes };
  } finally {
    client.close();
    await cluster.destroy();
    rmSync(join(dir, 'nodes'), { recursive: true, force: true });
  }
}

export async function measureHistory(dir: string, windowMs: number, rounds: number): Promise<HistoryFigures> {
  mkdirSync(dir, { recursive: true });
  const on: Round[] = [];
  const off: Round[] = [];
  const order: { history: boolean; tps: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    // Alternating, off first on even rounds and on first on odd ones.
    for (const h of i % 2 === 0 ? [false, true] : [true, false]) {
      const r = await round(dir, h, windowMs);
      (h ? on : off).push(r);
      order.push({ history: h, tps: Math.round(r.tps) });
    }
  }
  const tps = (rs: Round[]): number => rs.reduce((a, r) => a + r.tps, 0) / rs.length;
  const p50 = (rs: Round[]): number =>
    pct(
      rs.flatMap((r) => r.lat),
      50,
    );
  const txns = on.reduce((a, r) => a + r.txns, 0);
  return {
    tps_on: Math.round(tps(on)),
    tps_off: Math.round(tps(off)),
    p50_ms_on: r2(p50(on)),
    p50_ms_off: r2(p50(off)),
    tps_change_pct: r2(((tps(on) - tps(off)) / tps(off)) * 100),
    p50_change_pct: r2(((p50(on) - p50(off)) / p50(off)) * 100),
    bytes_per_txn_records: Math.round(on.reduce((a, r) => a + r.recordBytes, 0) / txns),
    bytes_per_txn_disk: Math.round(on.reduce((a, r) => a + r.diskBytes, 0) / txns),
    tps_rounds: order,
    concurrency: CONCURRENCY,
    rounds,
    window_ms: windowMs,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-bench-history-'));
  try {
    const quick = process.argv.includes('--quick');
    const i = process.argv.indexOf('--rounds');
    const rounds = i > 0 ? Number(process.argv[i + 1]) : quick ? 2 : 3;
    if (!(Number.isInteger(rounds) && rounds >= 1 && rounds <= 20))
      throw new Error('--rounds takes a whole number from 1 to 20');
    const f = await measureHistory(dir, quick ? 8_000 : 20_000, rounds);
    process.stdout.write(`${JSON.stringify({ history: f }, null, 2)}\n`);
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}
