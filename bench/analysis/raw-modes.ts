// `npm run bench -- raw-modes [--seconds 180] [--window-ms 3000] [--etcd]`
//
// The raw log's latency over time beside what the disk did meanwhile. It
// starts a 3-node cluster in the OS temp dir, sends one 100-byte Put at a
// time to the leader on its stream (as bench/harness/loadgen.ts's raw mode does),
// and prints one line per window: the Puts' p50 and p90, each node's CPU per
// Put (utime + stime from /proc), and from /proc/diskstats of the device
// that holds the temp dir the flushes the block layer completed per Put and
// their mean time. Written to tell the machine's slow minutes from the
// code's: a p50 that moves while the CPU per Put stays put, and moves with
// the time per flush, is the disk's. With --etcd, etcd 3.4's three members
// (bench/harness/etcd.ts) run beside the cluster and the windows alternate between
// the two, Verdict first; the idle system is not paused (bench/scenarios/paired.ts
// does that), so each window carries the other's heartbeats. Linux only;
// everything is stopped at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuMsOf } from '../harness/cpu-sample.ts';
import { flushCounter, msPerFlush, usPerFlush } from '../harness/disk-flushes.ts';
import { ensureEtcd, EtcdCluster } from '../harness/etcd.ts';
import { BenchCluster, intFlag, killAllNow, stopAll } from '../harness/procs.ts';
import { etcdPut, verdictPut, type RawPut } from '../harness/raw-put.ts';

const SECONDS = intFlag('seconds', 180);
const WINDOW_MS = intFlag('window-ms', 3_000);
const ETCD = process.argv.includes('--etcd');

/** utime + stime of a process in ms (0 once it is gone). */
function cpuMs(pid: number): number {
  const s = cpuMsOf(pid);
  return s === null ? 0 : s.user + s.sys;
}

interface Target {
  label: string;
  put: RawPut;
  procs: { id: string; pid: number }[];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-raw-modes-'));
  process.on('exit', killAllNow);
  let etcd: EtcdCluster | null = null;
  const targets: Target[] = [];
  try {
    const disk = flushCounter(dir);
    const c = await BenchCluster.start(join(dir, 'verdict'), 3, 'modes');
    const leader = await c.waitForLeader();
    targets.push({
      label: 'verdict',
      put: verdictPut(leader.address),
      procs: c.nodes.map((n) => ({ id: n.id === leader.id ? `${n.id}*` : n.id, pid: n.child?.proc.pid ?? 0 })),
    });
    if (ETCD) {
      const bin = ensureEtcd((line) => process.stdout.write(`${line}\n`));
      if ('skipped' in bin) throw new Error(`--etcd: ${bin.skipped}`);
      etcd = await EtcdCluster.start(bin, join(dir, 'etcd'));
      const e = etcd;
      targets.push({
        label: 'etcd',
        put: etcdPut(await e.leader()),
        procs: e.members.map((m) => ({ id: m.name, pid: m.child.proc.pid ?? 0 })),
      });
    }
    const value = Buffer.alloc(100, 0x61);
    process.stdout.write(
      `raw-modes: ${targets.map((t) => t.label).join(' and ')}, 3 members each, one 100-byte Put at a time, ${SECONDS} s in windows of ${WINDOW_MS} ms\n`,
    );
    const t0 = Date.now();
    let seq = 0;
    for (let w = 0; Date.now() - t0 < SECONDS * 1_000; w++) {
      const t = targets[w % targets.length];
      const lat: number[] = [];
      const cpu0 = t.procs.map((p) => cpuMs(p.pid));
      const d0 = disk();
      const end = Date.now() + WINDOW_MS;
      while (Date.now() < end) {
        const s = performance.now();
        await t.put.put(`modes-${seq++ % 256}`, value);
        lat.push(performance.now() - s);
      }
      lat.sort((a, b) => a - b);
      const cpu1 = t.procs.map((p) => cpuMs(p.pid));
      const d1 = disk();
      const flushes = d1.flushes - d0.flushes;
      const perPut = t.procs.map((p, i) => `${p.id} ${((cpu1[i] - cpu0[i]) / lat.length).toFixed(2)}`).join(', ');
      process.stdout.write(
        `${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s  ${t.label.padEnd(7)}  puts ${lat.length}  p50 ${lat[lat.length >> 1].toFixed(2)} ms  p90 ${lat[Math.floor(lat.length * 0.9)].toFixed(2)} ms  ` +
          `CPU ms/put ${perPut}  flushes/put ${(flushes / lat.length).toFixed(2)}  ms/flush ${msPerFlush(usPerFlush(d0, d1))}\n`,
      );
    }
  } finally {
    for (const t of targets) t.put.close();
    await etcd?.destroy();
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`raw-modes: failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
