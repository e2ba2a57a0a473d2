// CPU time per committed transaction, per process, over exactly a load
// generator's measured window (its "window open" and "window closed" lines,
// bench/harness/window-marks.ts): utime + stime of every process that touches a
// transaction, read from /proc/<pid>/stat at both marks (Linux only).
//
// On a machine with few cores this is the throughput ceiling: every process
// of the system shares the same cores, so no run can commit more than
// cores × 1000 / (CPU ms per transaction) transactions a second, however the
// work is scheduled. Unlike wall-clock figures, the sum moves little when
// other work shares the machine. Used by `npm run bench` for every commit
// scenario and by bench/analysis/cpu-per-txn.ts.

import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Child } from './procs.ts';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ; 100 on every Linux build that matters). */
const USER_HZ = 100;

/** What a sampled process is to the transaction. */
export type CpuKind = 'leader' | 'follower' | 'participant' | 'loadgen' | 'database' | 'etcd';

export interface CpuProc {
  kind: CpuKind;
  label: string;
  pid: number;
}

/** CPU of one scenario's measured window, per committed transaction. */
export interface CpuFigures {
  /** Every sampled process together, ms of CPU per committed transaction. */
  ms_per_txn: number;
  /** Of that, in the kernel (system calls: sockets, fsync). */
  sys_ms_per_txn: number;
  by_kind: Partial<Record<CpuKind, number>>;
  /** Every sampled process, ms of CPU (and of it in the kernel) per committed transaction. */
  by_process: { label: string; kind: CpuKind; ms_per_txn: number; sys_ms_per_txn: number }[];
  /** Cores of the machine; every sampled process shares them. */
  cores: number;
  /** cores × 1000 / ms_per_txn: no run on this machine commits faster than this with this much CPU per transaction. */
  ceiling_tps: number;
  /** Of the window, the fraction of all cores the sampled processes kept busy. */
  busy: number;
}

interface Sample {
  user: number;
  sys: number;
}

/** The fields of /proc/<pid>/stat from the third on (state, ppid, ...); null once the process is gone. */
function statFields(pid: number): string[] | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces; fields after the closing parenthesis are plain.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime and stime of a live process in ms; null once it is gone. */
export function cpuMsOf(pid: number): Sample | null {
  const rest = statFields(pid);
  if (rest === null) return null;
  return { user: (Number(rest[11]) * 1000) / USER_HZ, sys: (Number(rest[12]) * 1000) / USER_HZ };
}

/** The state letter of a process ('R', 'S', 'T' when stopped by a signal, ...); null once it is gone. */
export function procState(pid: number): string | null {
  return statFields(pid)?.[0] ?? null;
}

/**
 * PostgreSQL and MariaDB server processes (every backend is its own process
 * for PostgreSQL): those this process started (its descendants), so another
 * server on a shared machine is not counted; every one on the machine when
 * none descends from this process (a server VERDICT_PG_URL or
 * VERDICT_MYSQL_URL names).
 */
export function databaseProcs(): CpuProc[] {
  const all: CpuProc[] = [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((x) => /^\d+$/.test(x));
  } catch {
    return all;
  }
  const parentOf = new Map<number, number>();
  for (const p of pids) {
    const pid = Number(p);
    const rest = statFields(pid);
    if (rest !== null) parentOf.set(pid, Number(rest[1]));
    let comm: string;
    try {
      comm = readFileSync(`/proc/${p}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (comm === 'postgres' || comm === 'mariadbd' || comm === 'mysqld')
      all.push({ kind: 'database', label: comm, pid });
  }
  const descends = (pid: number): boolean => {
    // Bounded walk up the tree: pid 1 (or a vanished parent) ends it.
    for (let p = parentOf.get(pid), hops = 0; p !== undefined && p > 1 && hops < 64; p = parentOf.get(p), hops++)
      if (p === process.pid) return true;
    return false;
  };
  const ours = all.filter((p) => descends(p.pid));
  return ours.length > 0 ? ours : all;
}

export function childProc(kind: CpuKind, label: string, c: Child | null | undefined): CpuProc[] {
  const pid = c?.proc.pid;
  return pid === undefined ? [] : [{ kind, label, pid }];
}

/**
 * Samples `procs()` (and the load generator that prints the marks) at
 * "window open" and "window closed". Feed it the load generator's lines
 * (runJsonChild's onLine); ask figures() after it finished.
 */
export class CpuWindow {
  private readonly start = new Map<number, { p: CpuProc; s: Sample }>();
  private readonly end = new Map<number, Sample>();
  private openedAtMs = 0;
  private windowMs = 0;
  private state: 'before' | 'open' | 'closed' = 'before';

  constructor(private readonly procs: () => CpuProc[]) {}

  onLine = (line: string, loadgen: Child): void => {
    if (line === 'window open' && this.state === 'before') {
      this.state = 'open';
      this.openedAtMs = performance.now();
      for (const p of [...this.procs(), ...childProc('loadgen', 'loadgen', loadgen)]) {
        const s = cpuMsOf(p.pid);
        if (s !== null) this.start.set(p.pid, { p, s });
      }
    } else if (line === 'window closed' && this.state === 'open') {
      this.state = 'closed';
      this.windowMs = performance.now() - this.openedAtMs;
      for (const pid of this.start.keys()) {
        const s = cpuMsOf(pid);
        if (s !== null) this.end.set(pid, s);
      }
    }
  };

  /** Null when the window was never reported or nothing committed in it. */
  figures(committed: number): CpuFigures | null {
    if (this.state !== 'closed' || committed <= 0) return null;
    const byKind: Partial<Record<CpuKind, number>> = {};
    const byProcess: CpuFigures['by_process'] = [];
    let total = 0;
    let sys = 0;
    for (const [pid, { p, s }] of this.start) {
      // A process gone before the window closed counts what it used until its last sample: nothing.
      const e = this.end.get(pid) ?? s;
      const used = e.user - s.user + (e.sys - s.sys);
      total += used;
      sys += e.sys - s.sys;
      byKind[p.kind] = (byKind[p.kind] ?? 0) + used;
      byProcess.push({
        label: p.label,
        kind: p.kind,
        ms_per_txn: round3(used / committed),
        sys_ms_per_txn: round3((e.sys - s.sys) / committed),
      });
    }
    const cores = availableParallelism();
    for (const k of Object.keys(byKind) as CpuKind[]) byKind[k] = round3((byKind[k] ?? 0) / committed);
    const perTxn = total / committed;
    return {
      ms_per_txn: round3(perTxn),
      sys_ms_per_txn: round3(sys / committed),
      by_kind: byKind,
      by_process: byProcess,
      cores,
      ceiling_tps: perTxn > 0 ? Math.round((cores * 1000) / perTxn) : 0,
      busy: this.windowMs > 0 ? round3(total / (this.windowMs * cores)) : 0,
    };
  }
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
