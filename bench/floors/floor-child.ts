// The floors: what the machine costs before Verdict adds anything. One child
// process per use, started by bench/floors/floors.ts with one JSON argument:
//
//   fsync  append 200 bytes to a file and fdatasync it, one sample at a time
//          (fs.writeSync + fs.fdatasyncSync): what a journal or log append costs.
//   echo   a tiny gRPC echo server on 127.0.0.1 (prints "listening <port>");
//          it runs until its stdin closes.
//   grpc   against an echo server in another process, one message in flight:
//          unary     one unary call per round trip;
//          bidi      a message and its echo on one long-lived bidi stream;
//          streams   Raft's pattern (src/transport/peer.ts): a message on a
//                    long-lived client stream to the server, and its echo on
//                    the server's own client stream back to ours.
//   flush-pattern
//          one transaction's flushes on the one disk every process shares,
//          with nothing else: five threads stand for three nodes (each
//          writes to its segment file and fdatasyncs it, then writes its
//          mark and fdatasyncs that: two flushes one after the other, as
//          src/storage/store.ts does) and two participants (one append and
//          fdatasync of their journal). Every file is written the way the
//          one it stands for is (openFloorFile below). Patterns, measured in turn:
//            classic1   the participants' flushes at once, then one node's two
//            classic3   the participants' flushes at once, then three nodes'
//                       two each at once (done when the leader and one
//                       follower are)
//            parallel3  all five at once (parallel commit: done when the
//                       leader, one follower and both participants are)
//            parallel3_one_sync  the same with one flush per node, for what
//                       the mark's own sync costs
//          and, on sixteen more threads standing for participants (one
//          journal each), the prepare phase of the participant sweep:
//            participants1   one participant's journal flush
//            participants16  sixteen at once, until the last is done (a
//                       transaction waits for every vote)
//   fan-participant
//          the least a participant (or follower) process can do: a gRPC
//          server whose bidi stream takes a message, writes 200 bytes to
//          each of its files (openFloorFile) and fdatasyncs it, in turn (a participant has a
//          journal; a follower a segment and a mark), and answers (prints
//          "listening <port>"; runs until its stdin closes). A participant
//          gets one message per transaction (the previous DECISION would
//          ride in the PREPARE and share its sync): fewer than Verdict sends.
//   fanout one process for the client and the coordinator (its own segment
//          and mark, fdatasynced off the event loop as a node's are) against
//          sixteen participant processes and two followers, one transaction
//          at a time. Each sample runs every pattern in turn, so all see the
//          machine in the same state:
//            participants1 / participantsN  PREPARE to one participant, then
//                       to all, until the last VOTE
//            classic1   PREPARE to two, both VOTEs, then the coordinator's
//                       two flushes
//            classic3   the same, then the leader's flushes beside an append
//                       to both followers, until the leader and one follower
//            parallel3  the PREPAREs, the appends and the leader's flushes
//                       at once, until both VOTEs, the leader and a follower
//            raft3      a raw log write: the leader's flushes beside the
//                       append, until the leader and one follower
//            raft3_one_sync  the same with one flush per node (no mark)
//          and then once more the raw log write with the client in a
//          process of its own (mode raft-client, started by this one), as
//          the load generator is for Verdict and for etcd:
//            raft3_client  a Put on a long-lived bidi stream to this
//                       process, answered once its own flushes and one
//                       follower's are done, timed at the client
//          The two cores run every process, so these are floors in CPU and
//          scheduling as well as disk; it also reports the participants' CPU
//          per transaction.
//   raft-client
//          the client of raft3_client: one Put in flight on a bidi stream
//          to the fanout process, timed from its write to the answer.
//
// Every mode prints one JSON line of latency summaries in microseconds.
import * as grpc from '@grpc/grpc-js';
import { closeSync, fdatasyncSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { bind, fdatasyncAsync, ident, method, serveUntilStdinEnds } from './floor-grpc.ts';
import { newHistogram, recordMs, summarize, type Histogram, type LatencySummary } from '../harness/hist.ts';
import { runJsonChild } from '../harness/procs.ts';
import { FLOOR_FILE_SOURCE, openFloorFile } from './floor-file.ts';
import { MARK_SLOT_BYTES } from '../../src/storage/mark-file.ts';
import { PREALLOC_BYTES_DEFAULT } from '../../src/storage/segment-log.ts';

export type FloorConfig =
  | { mode: 'fsync'; file: string; bytes: number; samplesMax: number; measureMs: number }
  | { mode: 'echo' }
  | { mode: 'grpc'; address: string; bytes: number; warmupMs: number; measureMs: number }
  | { mode: 'flush-pattern'; dir: string; bytes: number; samplesMax: number; measureMs: number }
  | { mode: 'fan-participant'; files: string[]; bytes: number }
  | {
      mode: 'fanout';
      participants: string[];
      followers: string[];
      leaderDir: string;
      bytes: number;
      warmupMs: number;
      measureMs: number;
    }
  | { mode: 'raft-client'; address: string; bytes: number; warmupMs: number; measureMs: number };

export interface FsyncFloor {
  fsync: LatencySummary;
}

export interface GrpcFloor {
  unary: LatencySummary;
  bidi: LatencySummary;
  streams: LatencySummary;
}

const ECHO = {
  Unary: method('Unary', false, false),
  Bidi: method('Bidi', true, true),
  Relay: method('Relay', true, false),
  Sink: method('Sink', true, false),
};
const FAN_PARTICIPANT = { Prepare: method('Prepare', true, true) };
const RAFT_LEADER = { Put: method('Put', true, true) };
/**
 * A fan-out message's first byte: a PREPARE or append (flush every file), the same flushing the first file only, or a
 * question for the process's CPU so far.
 */
const PREPARE = 1;
const CPU_PROBE = 2;
const APPEND_ONE_SYNC = 3;
const REPLY_TO = 'reply-to';

function fsyncFloor(cfg: Extract<FloorConfig, { mode: 'fsync' }>): FsyncFloor {
  const h = newHistogram();
  const buf = Buffer.alloc(cfg.bytes, 0x62);
  const fd = openSync(cfg.file, 'a');
  const stopAt = performance.now() + cfg.measureMs;
  try {
    for (let i = 0; i < cfg.samplesMax && performance.now() < stopAt; i++) {
      const t0 = performance.now();
      writeSync(fd, buf);
      fdatasyncSync(fd);
      recordMs(h, performance.now() - t0);
    }
  } finally {
    closeSync(fd);
    unlinkSync(cfg.file);
  }
  return { fsync: summarize(h) };
}

export interface FlushPatternFloor {
  classic1: LatencySummary;
  classic3: LatencySummary;
  parallel3: LatencySummary;
  parallel3_one_sync: LatencySummary;
  /** Absent in runs before the participants' patterns were measured. */
  participants1?: LatencySummary;
  participants16?: LatencySummary;
}

// A flusher thread: waits for the next round, appends and fdatasyncs its
// first jobs[idx] files one after the other, stamps the time, counts itself done.
const FLUSHER = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { sab, idx, threads, endsAt, files, bytes, preallocBytes, slotBytes } = workerData;
${FLOOR_FILE_SOURCE}
const ctl = new Int32Array(sab, 0, 2);
const jobs = new Int32Array(sab, 8, threads);
const ends = new BigInt64Array(sab, endsAt, threads);
const out = files.map((f) => openFloorFile(fs, f, preallocBytes, slotBytes));
const buf = Buffer.alloc(bytes, 0x62);
let round = 0;
for (;;) {
  Atomics.wait(ctl, 0, round);
  round = Atomics.load(ctl, 0);
  if (round < 0) break;
  for (let i = 0; i < jobs[idx]; i++) { out[i].write(buf); fs.fdatasyncSync(out[i].fd); }
  ends[idx] = process.hrtime.bigint();
  Atomics.add(ctl, 1, 1);
  Atomics.notify(ctl, 1);
}
for (const f of out) f.close();
`;

interface FlusherPool {
  /** One round: thread i flushes n[i] of its files; the µs from the start to each thread's end. */
  round: (n: number[]) => number[];
  close: () => Promise<void>;
}

/** One thread per entry of `files` (that thread's files, flushed in order), started together for each round. */
async function flusherPool(files: string[][], bytes: number): Promise<FlusherPool> {
  const threads = files.length;
  const endsAt = 8 + 8 * Math.ceil((4 * threads) / 8);
  const sab = new SharedArrayBuffer(endsAt + 8 * threads);
  const ctl = new Int32Array(sab, 0, 2);
  const jobs = new Int32Array(sab, 8, threads);
  const ends = new BigInt64Array(sab, endsAt, threads);
  const workers = files.map(
    (f, idx) =>
      new Worker(FLUSHER, {
        eval: true,
        workerData: {
          sab,
          idx,
          threads,
          endsAt,
          files: f,
          bytes,
          preallocBytes: PREALLOC_BYTES_DEFAULT,
          slotBytes: MARK_SLOT_BYTES,
        },
      }),
  );
  await Promise.all(workers.map((w) => new Promise((r) => w.once('online', r))));
  return {
    round: (n) => {
      n.forEach((x, i) => (jobs[i] = x));
      Atomics.store(ctl, 1, 0);
      const t0 = process.hrtime.bigint();
      Atomics.add(ctl, 0, 1);
      Atomics.notify(ctl, 0);
      for (let done = Atomics.load(ctl, 1); done < threads; done = Atomics.load(ctl, 1)) Atomics.wait(ctl, 1, done);
      return n.map((_, i) => Number(ends[i] - t0) / 1000);
    },
    close: async () => {
      Atomics.store(ctl, 0, -1);
      Atomics.notify(ctl, 0);
      await Promise.all(workers.map((w) => new Promise((r) => w.once('exit', r))));
      for (const f of files.flat()) rmSync(f, { force: true });
    },
  };
}

const FAN = 16;

/**
 * Pool one: threads 0–2 are the nodes (segment, mark), 0 the leader; 3–4 the
 * participants (journal). Pool two: FAN participants for the sweep. Each
 * sample runs every pattern once, so all see the disk in the same state.
 */
async function flushPatternFloor(cfg: Extract<FloorConfig, { mode: 'flush-pattern' }>): Promise<FlushPatternFloor> {
  const nodes = await flusherPool(
    [0, 1, 2]
      .map((i) => [join(cfg.dir, `n${i}-segment`), join(cfg.dir, `n${i}-mark`)])
      .concat([3, 4].map((i) => [join(cfg.dir, `p${i}-journal`)])),
    cfg.bytes,
  );
  const fan = await flusherPool(
    Array.from({ length: FAN }, (_, i) => [join(cfg.dir, `fan${i}-journal`)]),
    cfg.bytes,
  );
  const round = nodes.round;
  const quorum = (e: number[]): number => Math.max(e[0], Math.min(e[1], e[2]));
  const hs = {
    classic1: newHistogram(),
    classic3: newHistogram(),
    parallel3: newHistogram(),
    parallel3_one_sync: newHistogram(),
    participants1: newHistogram(),
    participants16: newHistogram(),
  };
  const stopAt = performance.now() + cfg.measureMs;
  const alone = Array.from({ length: FAN }, (_, i) => (i === 0 ? 1 : 0));
  const together = Array.from({ length: FAN }, () => 1);
  try {
    for (let i = 0; i < cfg.samplesMax && performance.now() < stopAt; i++) {
      const prepared = round([0, 0, 0, 1, 1]);
      const votes = Math.max(prepared[3], prepared[4]);
      recordMs(hs.classic1, (votes + round([2, 0, 0, 0, 0])[0]) / 1000);
      const again = round([0, 0, 0, 1, 1]);
      recordMs(hs.classic3, (Math.max(again[3], again[4]) + quorum(round([2, 2, 2, 0, 0]))) / 1000);
      const all = round([2, 2, 2, 1, 1]);
      recordMs(hs.parallel3, Math.max(quorum(all), all[3], all[4]) / 1000);
      const one = round([1, 1, 1, 1, 1]);
      recordMs(hs.parallel3_one_sync, Math.max(quorum(one), one[3], one[4]) / 1000);
      recordMs(hs.participants1, fan.round(alone)[0] / 1000);
      recordMs(hs.participants16, Math.max(...fan.round(together)) / 1000);
    }
  } finally {
    await nodes.close();
    await fan.close();
  }
  return {
    classic1: summarize(hs.classic1),
    classic3: summarize(hs.classic3),
    parallel3: summarize(hs.parallel3),
    parallel3_one_sync: summarize(hs.parallel3_one_sync),
    participants1: summarize(hs.participants1),
    participants16: summarize(hs.participants16),
  };
}

async function echoServer(): Promise<void> {
  const server = new grpc.Server();
  const sinks = new Map<string, grpc.ClientWritableStream<Buffer>>();
  server.addService(ECHO, {
    Unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, call.request),
    Bidi: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (d: Buffer) => call.write(d));
      call.on('end', () => call.end());
    },
    Relay: (call: grpc.ServerReadableStream<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const to = String(call.metadata.get(REPLY_TO)[0] ?? '');
      let sink = sinks.get(to);
      if (sink === undefined) {
        const client = new grpc.Client(to, grpc.credentials.createInsecure());
        sink = client.makeClientStreamRequest<Buffer, Buffer>(ECHO.Sink.path, ident, ident, () => client.close());
        sinks.set(to, sink);
      }
      const s = sink;
      call.on('data', (d: Buffer) => s.write(d));
      call.on('end', () => {
        s.end();
        sinks.delete(to);
        cb(null, Buffer.alloc(0));
      });
    },
    Sink: (_call: grpc.ServerReadableStream<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
      cb(null, Buffer.alloc(0)),
  });
  await serveUntilStdinEnds(server);
}

/** A participant (or a follower) that does no more than the protocol needs: see the head of this file. */
async function fanParticipant(cfg: Extract<FloorConfig, { mode: 'fan-participant' }>): Promise<void> {
  const files = cfg.files.map(openFloorFile);
  const record = Buffer.alloc(cfg.bytes, 0x70);
  const server = new grpc.Server();
  server.addService(FAN_PARTICIPANT, {
    Prepare: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (d: Buffer) => {
        if (d[0] === CPU_PROBE) {
          const u = process.cpuUsage();
          call.write(Buffer.from(JSON.stringify({ cpu_us: u.user + u.system })));
          return;
        }
        for (const f of d[0] === APPEND_ONE_SYNC ? files.slice(0, 1) : files) {
          f.write(record);
          fdatasyncSync(f.fd);
        }
        call.write(d);
      });
      call.on('end', () => call.end());
    },
  });
  await serveUntilStdinEnds(server);
  for (const f of files) f.close();
  for (const f of cfg.files) rmSync(f, { force: true });
}

export interface FanoutFloor {
  /** PREPARE to one participant process until its VOTE is back (journal fdatasync in between). */
  participants1: LatencySummary;
  /** The same to every participant process at once, until the last VOTE. */
  participantsN: LatencySummary;
  /** How many participant processes participantsN sent to. */
  n: number;
  /**
   * PREPARE to two participants, both VOTEs, then the coordinator's own two flushes (segment, mark): classic 2PC on one
   * node.
   */
  classic1: LatencySummary;
  /**
   * The same, then the leader's two flushes beside an append to two follower processes (two flushes each), until the
   * leader and one follower are done.
   */
  classic3: LatencySummary;
  /**
   * Parallel commit: the two PREPAREs, the two appends and the leader's flushes all at once, until both VOTEs, the
   * leader and one follower.
   */
  parallel3: LatencySummary;
  /**
   * A raw log write on 3 nodes: the leader's two flushes beside the append to both followers, until the leader and one
   * follower (absent in older results).
   */
  raft3?: LatencySummary;
  /** The same with one flush per node, no mark: how etcd's log syncs (absent in older results). */
  raft3_one_sync?: LatencySummary;
  /**
   * raft3 with the client in a process of its own, timed there: a Put on a bidi stream to the leader process, answered
   * once the leader's two flushes and one follower are done (absent in older results).
   */
  raft3_client?: LatencySummary;
  /** CPU of the participant processes over the measured window, per participant per transaction (µs). */
  participant_cpu_us_per_txn: number;
  /** CPU of the sending process (the coordinator's side) over the window, per message it sent (µs). */
  coordinator_cpu_us_per_message: number;
}

/**
 * One long-lived stream to a fan-participant process; send() resolves with the reply and when it arrived
 * (performance.now()).
 */
function fanConnection(address: string): {
  send: (m: Buffer) => Promise<{ at: number; reply: Buffer }>;
  close: () => void;
} {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest<Buffer, Buffer>(FAN_PARTICIPANT.Prepare.path, ident, ident);
  const waiting: ((d: Buffer) => void)[] = [];
  call.on('data', (d: Buffer) => waiting.shift()?.(d));
  call.on('error', () => {});
  return {
    send: (m) =>
      new Promise((res) => {
        waiting.push((reply) => res({ at: performance.now(), reply }));
        call.write(m);
      }),
    close: () => {
      call.end();
      client.close();
    },
  };
}

async function fanoutFloor(cfg: Extract<FloorConfig, { mode: 'fanout' }>): Promise<FanoutFloor> {
  const msg = Buffer.alloc(cfg.bytes, 0x71);
  msg[0] = PREPARE;
  const ps = cfg.participants.map(fanConnection);
  const fs = cfg.followers.map(fanConnection);
  if (ps.length < 2 || fs.length !== 2) throw new Error('fanout: needs two participants or more and two followers');
  // The leader's own log: a segment append and its fdatasync, then the mark's, off the event loop as the node's are.
  const record = Buffer.alloc(cfg.bytes, 0x6c);
  const leaderFiles = ['segment', 'mark'].map((f) => openFloorFile(join(cfg.leaderDir, `fan-leader-${f}`)));
  const leaderFlush = async (syncs = 2): Promise<number> => {
    for (const f of leaderFiles.slice(0, syncs)) {
      f.write(record);
      await fdatasyncAsync(f.fd);
    }
    return performance.now();
  };
  const n = ps.length;
  let sent = 0;
  const to = (cs: typeof ps, m: Buffer = msg): Promise<number[]> => {
    sent += cs.length;
    return Promise.all(cs.map(async (c) => (await c.send(m)).at));
  };
  const two = ps.slice(0, 2);
  const hs = {
    participants1: newHistogram(),
    participantsN: newHistogram(),
    classic1: newHistogram(),
    classic3: newHistogram(),
    parallel3: newHistogram(),
    raft3: newHistogram(),
    raft3_one_sync: newHistogram(),
  };
  const oneSync = Buffer.from(msg);
  oneSync[0] = APPEND_ONE_SYNC;
  const sample = async (keep: boolean): Promise<void> => {
    const rec = (h: Histogram, from: number, at: number): void => {
      if (keep) recordMs(h, at - from);
    };
    let t0 = performance.now();
    rec(hs.participants1, t0, (await to([ps[0]]))[0]);
    t0 = performance.now();
    rec(hs.participantsN, t0, Math.max(...(await to(ps))));
    t0 = performance.now();
    await to(two);
    rec(hs.classic1, t0, await leaderFlush());
    t0 = performance.now();
    await to(two);
    const [leader, followers] = await Promise.all([leaderFlush(), to(fs)]);
    rec(hs.classic3, t0, Math.max(leader, Math.min(...followers)));
    t0 = performance.now();
    const [votes, all, lead] = await Promise.all([to(two), to(fs), leaderFlush()]);
    rec(hs.parallel3, t0, Math.max(...votes, lead, Math.min(...all)));
    t0 = performance.now();
    const [raftLead, raftFollowers] = await Promise.all([leaderFlush(), to(fs)]);
    rec(hs.raft3, t0, Math.max(raftLead, Math.min(...raftFollowers)));
    t0 = performance.now();
    const [oneLead, oneFollowers] = await Promise.all([leaderFlush(1), to(fs, oneSync)]);
    rec(hs.raft3_one_sync, t0, Math.max(oneLead, Math.min(...oneFollowers)));
  };
  const cpuOfParticipants = async (): Promise<number> => {
    let sum = 0;
    for (const p of ps)
      sum += (JSON.parse((await p.send(Buffer.from([CPU_PROBE]))).reply.toString()) as { cpu_us: number }).cpu_us;
    return sum;
  };
  const start = performance.now();
  while (performance.now() - start < cfg.warmupMs) await sample(false);
  const cpu0 = await cpuOfParticipants();
  const own0 = process.cpuUsage();
  sent = 0;
  let samples = 0;
  const from = performance.now();
  while (performance.now() - from < cfg.measureMs) {
    await sample(true);
    samples++;
  }
  const own = process.cpuUsage(own0);
  const messages = sent;
  const cpu = (await cpuOfParticipants()) - cpu0;
  const raft3Client = await raftWithClient(cfg, msg, leaderFlush, fs);
  for (const c of [...ps, ...fs]) c.close();
  for (const f of leaderFiles) f.close();
  for (const f of ['segment', 'mark']) rmSync(join(cfg.leaderDir, `fan-leader-${f}`), { force: true });
  return {
    participants1: summarize(hs.participants1),
    participantsN: summarize(hs.participantsN),
    n,
    classic1: summarize(hs.classic1),
    classic3: summarize(hs.classic3),
    parallel3: summarize(hs.parallel3),
    raft3: summarize(hs.raft3),
    raft3_one_sync: summarize(hs.raft3_one_sync),
    raft3_client: raft3Client,
    // Per sample: 1 + n for the sweep, 2 each for classic1, classic3 and parallel3.
    participant_cpu_us_per_txn: Math.round(cpu / (samples * (1 + n + 6))),
    coordinator_cpu_us_per_message: Math.round((own.user + own.system) / messages),
  };
}

/** Runs `once` back to back: warm-up, then the measured window. */
async function measure(warmupMs: number, measureMs: number, once: () => Promise<void>): Promise<LatencySummary> {
  const h = newHistogram();
  const start = performance.now();
  while (performance.now() - start < warmupMs) await once();
  const from = performance.now();
  while (performance.now() - from < measureMs) {
    const t0 = performance.now();
    await once();
    recordMs(h, performance.now() - t0);
  }
  return summarize(h);
}

/**
 * One message in flight at a time: roundTrip(send) makes a sample that calls
 * send and resolves when arrived() is next called (the echo or answer came).
 */
function oneInFlight(): { arrived: () => void; roundTrip: (send: () => void) => () => Promise<void> } {
  let waiter: (() => void) | null = null;
  return {
    arrived: () => {
      const w = waiter;
      waiter = null;
      w?.();
    },
    roundTrip: (send) => () =>
      new Promise<void>((res) => {
        waiter = res;
        send();
      }),
  };
}

async function grpcFloor(cfg: Extract<FloorConfig, { mode: 'grpc' }>): Promise<GrpcFloor> {
  const msg = Buffer.alloc(cfg.bytes, 0x63);
  const client = new grpc.Client(cfg.address, grpc.credentials.createInsecure());
  const unary = await measure(
    cfg.warmupMs,
    cfg.measureMs,
    () =>
      new Promise<void>((res, rej) => {
        client.makeUnaryRequest<Buffer, Buffer>(
          ECHO.Unary.path,
          ident,
          ident,
          msg,
          { deadline: Date.now() + 5_000 },
          (err) => (err ? rej(err) : res()),
        );
      }),
  );

  const { arrived, roundTrip } = oneInFlight();
  const bidiCall = client.makeBidiStreamRequest<Buffer, Buffer>(ECHO.Bidi.path, ident, ident);
  bidiCall.on('data', arrived);
  bidiCall.on('error', () => {});
  const bidi = await measure(
    cfg.warmupMs,
    cfg.measureMs,
    roundTrip(() => bidiCall.write(msg)),
  );
  bidiCall.end();

  // Our own server for the echo's client stream back to us.
  const sinkServer = new grpc.Server();
  sinkServer.addService(
    { Sink: ECHO.Sink },
    {
      Sink: (call: grpc.ServerReadableStream<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        call.on('data', arrived);
        call.on('end', () => cb(null, Buffer.alloc(0)));
      },
    },
  );
  const port = await bind(sinkServer);
  const md = new grpc.Metadata();
  md.set(REPLY_TO, `127.0.0.1:${port}`);
  const relay = client.makeClientStreamRequest<Buffer, Buffer>(ECHO.Relay.path, ident, ident, md, () => {});
  const streams = await measure(
    cfg.warmupMs,
    cfg.measureMs,
    roundTrip(() => relay.write(msg)),
  );
  relay.end();
  sinkServer.forceShutdown();
  client.close();
  return { unary, bidi, streams };
}

/**
 * raft3 with a client process of its own: this process serves Puts on a bidi stream and answers each once its own
 * flushes and the first follower's reply are in (the second follower's comes when it comes, as in a cluster); a
 * raft-client child sends them one at a time and reports what it timed.
 */
async function raftWithClient(
  cfg: Extract<FloorConfig, { mode: 'fanout' }>,
  msg: Buffer,
  leaderFlush: () => Promise<number>,
  followers: ReturnType<typeof fanConnection>[],
): Promise<LatencySummary> {
  const server = new grpc.Server();
  server.addService(RAFT_LEADER, {
    Put: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (put: Buffer) => {
        void Promise.all([leaderFlush(), Promise.any(followers.map((f) => f.send(msg)))]).then(() => call.write(put));
      });
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  });
  const port = await bind(server);
  try {
    const client: Extract<FloorConfig, { mode: 'raft-client' }> = {
      mode: 'raft-client',
      address: `127.0.0.1:${port}`,
      bytes: cfg.bytes,
      warmupMs: cfg.warmupMs,
      measureMs: cfg.measureMs,
    };
    const r = await runJsonChild<{ raft3_client: LatencySummary }>(
      'raft3 client',
      'floors/floor-child.ts',
      client,
      join(cfg.leaderDir, 'floors-raft-client.log'),
      cfg.warmupMs + cfg.measureMs + 30_000,
    );
    return r.raft3_client;
  } finally {
    server.forceShutdown();
  }
}

async function raftClient(
  cfg: Extract<FloorConfig, { mode: 'raft-client' }>,
): Promise<{ raft3_client: LatencySummary }> {
  const client = new grpc.Client(cfg.address, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest<Buffer, Buffer>(RAFT_LEADER.Put.path, ident, ident);
  const { arrived, roundTrip } = oneInFlight();
  call.on('data', arrived);
  call.on('error', () => {});
  const put = Buffer.alloc(cfg.bytes, 0x70);
  const raft3Client = await measure(
    cfg.warmupMs,
    cfg.measureMs,
    roundTrip(() => call.write(put)),
  );
  call.end();
  client.close();
  return { raft3_client: raft3Client };
}

async function main(): Promise<void> {
  const cfg = JSON.parse(process.argv[2] ?? '') as FloorConfig;
  setTimeout(() => process.exit(3), 120_000).unref();
  if (cfg.mode === 'echo') return echoServer();
  if (cfg.mode === 'fan-participant') return fanParticipant(cfg);
  process.stdin.on('end', () => process.exit(2)).resume();
  const out =
    cfg.mode === 'fsync'
      ? fsyncFloor(cfg)
      : cfg.mode === 'flush-pattern'
        ? await flushPatternFloor(cfg)
        : cfg.mode === 'fanout'
          ? await fanoutFloor(cfg)
          : cfg.mode === 'raft-client'
            ? await raftClient(cfg)
            : await grpcFloor(cfg);
  process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0));
}

await main();
