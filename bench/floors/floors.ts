// Runs the floors in child processes (bench/floors/floor-child.ts) and returns
// their summaries: fsync of a 200-byte append on the disk the clusters use,
// and gRPC round trips between two processes on loopback, one transaction's
// flushes, and the commit patterns done by minimal processes (fanoutFloor).
// The PostgreSQL floors come from bench/floors/pg.ts.
import { join } from 'node:path';
import type { FanoutFloor, FlushPatternFloor, FsyncFloor, GrpcFloor } from './floor-child.ts';
import type { LatencySummary } from '../harness/hist.ts';
import type { PgDirectFloor, PgDirectFloors } from './pg.ts';
import { listeningAddress, runJsonChild, spawnChild, stopChild, type Child } from '../harness/procs.ts';

export interface MachineFloors {
  fsync_200B: LatencySummary;
  grpc_unary_rtt: LatencySummary;
  grpc_bidi_rtt: LatencySummary;
  /** A message out on one client stream and back on the peer's: how Raft's transport talks. */
  grpc_client_streams_rtt: LatencySummary;
  /** The fsync floor of three processes at once on the one disk, as three nodes' logs are (absent in older results). */
  fsync_200B_x3?: ConcurrentFsyncFloor;
  /**
   * One transaction's flushes on the one disk, classic and parallel, 1 and 3 nodes (bench/floors/floor-child.ts,
   * flush-pattern; absent in older results).
   */
  flush_pattern?: FlushPatternFloor;
  /**
   * Commit patterns done by the least possible processes: the participant sweep's prepare phase (1 and 16), classic on
   * 1 and 3 nodes, parallel on 3, a raw log write on 3 (bench/floors/floor-child.ts, fanout; absent in older results).
   */
  fanout?: FanoutFloor;
}

/** Three processes each appending 200 bytes + fdatasync at once: each one's latency, in process order. */
export interface ConcurrentFsyncFloor {
  p50_us_each: number[];
  p99_us_each: number[];
  /** The median of the three p50s: the figure beside the one-process fsync_200B. */
  p50_us: number;
}

/**
 * The machine's floors and PostgreSQL's direct two-phase commit (bench/floors/pg.ts; null when PostgreSQL was skipped).
 */
export interface Floors extends MachineFloors, PgDirectFloors {
  /**
   * The shop/ledger transaction with the ledger on MariaDB, driven directly at 16 connections per database
   * (bench/floors/mysql.ts); absent in older results.
   */
  mysql_direct_16?: PgDirectFloor | null;
  /**
   * The same through the least possible processes, the ledger participant in front of MariaDB (bench/floors/mysql.ts);
   * absent in older results.
   */
  mysql_minimal_16?: PgDirectFloor | null;
}

export interface FloorTiming {
  measureMs: number;
  fsyncSamplesMax: number;
}

export async function measureFloors(dir: string, t: FloorTiming): Promise<MachineFloors> {
  const fsync = await runJsonChild<FsyncFloor>(
    'fsync floor',
    'floors/floor-child.ts',
    {
      mode: 'fsync',
      file: join(dir, 'fsync-floor.dat'),
      bytes: 200,
      samplesMax: t.fsyncSamplesMax,
      measureMs: t.measureMs,
    },
    join(dir, 'floors.log'),
    t.measureMs + 30_000,
  );
  const echo = spawnChild(
    'echo server',
    ['--import', 'tsx', join('bench', 'floors', 'floor-child.ts'), JSON.stringify({ mode: 'echo' })],
    join(dir, 'floors.log'),
    { stdin: true, stdout: true },
  );
  try {
    const address = await listeningAddress(echo, 20_000);
    const g = await runJsonChild<GrpcFloor>(
      'gRPC floor',
      'floors/floor-child.ts',
      { mode: 'grpc', address, bytes: 100, warmupMs: Math.min(1_000, t.measureMs / 4), measureMs: t.measureMs },
      join(dir, 'floors.log'),
      4 * t.measureMs + 30_000,
    );
    const x3 = await concurrentFsync(dir, t);
    const pattern = await runJsonChild<FlushPatternFloor>(
      'flush-pattern floor',
      'floors/floor-child.ts',
      { mode: 'flush-pattern', dir, bytes: 200, samplesMax: t.fsyncSamplesMax, measureMs: t.measureMs },
      join(dir, 'floors.log'),
      t.measureMs + 30_000,
    );
    const fanout = await fanoutFloor(dir, t);
    return {
      fsync_200B: fsync.fsync,
      grpc_unary_rtt: g.unary,
      grpc_bidi_rtt: g.bidi,
      grpc_client_streams_rtt: g.streams,
      fsync_200B_x3: x3,
      flush_pattern: pattern,
      fanout,
    };
  } finally {
    echo.proc.stdin?.end();
    await stopChild(echo, 'SIGTERM', 3_000);
  }
}

/** Three fsync children started together: what a 3-node cluster's appends cost each other on one disk. */
async function concurrentFsync(dir: string, t: FloorTiming): Promise<ConcurrentFsyncFloor> {
  const each = await Promise.all(
    [1, 2, 3].map((k) =>
      runJsonChild<FsyncFloor>(
        `fsync floor ${k} of 3`,
        'floors/floor-child.ts',
        {
          mode: 'fsync',
          file: join(dir, `fsync-floor-${k}.dat`),
          bytes: 200,
          samplesMax: t.fsyncSamplesMax,
          measureMs: t.measureMs,
        },
        join(dir, `floors-x3-${k}.log`),
        t.measureMs + 30_000,
      ),
    ),
  );
  const p50s = each.map((r) => r.fsync.p50_us);
  return {
    p50_us_each: p50s,
    p99_us_each: each.map((r) => r.fsync.p99_us),
    p50_us: [...p50s].sort((a, b) => a - b)[1],
  };
}

/** The participant processes of the participant sweep (16), as small as they can be. */
const FAN_PROCESSES = 16;

/**
 * FAN_PROCESSES fan-participant children with one journal each, two more
 * standing for the followers (a segment and a mark each), and the fanout
 * child that drives them one transaction at a time.
 */
export async function fanoutFloor(dir: string, t: FloorTiming): Promise<FanoutFloor> {
  const log = join(dir, 'floors-fanout.log');
  const start = (label: string, files: string[]): Child =>
    spawnChild(
      label,
      [
        '--import',
        'tsx',
        join('bench', 'floors', 'floor-child.ts'),
        JSON.stringify({ mode: 'fan-participant', files, bytes: 200 }),
      ],
      log,
      { stdin: true, stdout: true },
    );
  const participants = Array.from({ length: FAN_PROCESSES }, (_, i) =>
    start(`fan participant ${i}`, [join(dir, `fan-participant-${i}.journal`)]),
  );
  const followers = [1, 2].map((i) =>
    start(`fan follower ${i}`, [join(dir, `fan-follower-${i}.segment`), join(dir, `fan-follower-${i}.mark`)]),
  );
  try {
    const [ps, fs] = await Promise.all([
      Promise.all(participants.map((c) => listeningAddress(c))),
      Promise.all(followers.map((c) => listeningAddress(c))),
    ]);
    return await runJsonChild<FanoutFloor>(
      'fan-out floor',
      'floors/floor-child.ts',
      {
        mode: 'fanout',
        participants: ps,
        followers: fs,
        leaderDir: dir,
        bytes: 100,
        warmupMs: Math.min(3_000, t.measureMs),
        measureMs: t.measureMs,
      },
      log,
      // The patterns, then raft3 once more with a client process (its own warm-up, window and start).
      3 * t.measureMs + 40_000,
    );
  } finally {
    const all = [...participants, ...followers];
    for (const c of all) c.proc.stdin?.end();
    await Promise.all(all.map((c) => stopChild(c, 'SIGTERM', 3_000)));
  }
}
