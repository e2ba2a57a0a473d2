// The block layer's flush counters of the disk under a directory, from
// /proc/diskstats (fields 19 and 20: flush requests completed and the
// milliseconds spent on them, Linux 5.5 and later), and the arithmetic that
// turns readings taken at segment boundaries into time per flush. Used by
// bench/analysis/raw-modes.ts and the paired step (bench/scenarios/paired.ts): on this machine
// the virtual disk's flush time changes by two for minutes at a time, and a
// Verdict batch waits for two flushes where an etcd Put waits for one
// (docs/benchmarks.md, "The disk's two speeds").
import { readFileSync, statSync } from 'node:fs';

export interface FlushReading {
  flushes: number;
  ms: number;
}

/**
 * A reader of the flush counters of the device holding `dir`; it reads once
 * at once, so a device without them (tmpfs, overlay, an old kernel) throws
 * here rather than at the first window.
 */
export function flushCounter(dir: string): () => FlushReading {
  const dev = statSync(dir).dev;
  const major = (dev >> 8) & 0xfff;
  const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
  const read = (): FlushReading => {
    const line = readFileSync('/proc/diskstats', 'utf8')
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .find((f) => Number(f[0]) === major && Number(f[1]) === minor);
    if (line === undefined || line.length < 20)
      throw new Error(`/proc/diskstats has no flush counters for device ${major}:${minor} (the one holding ${dir})`);
    return { flushes: Number(line[18]), ms: Number(line[19]) };
  };
  read();
  return read;
}

/** The same, or null (with why) where the device has no counters: a figure to add, never a reason to fail a run. */
export function flushCounterOrNull(dir: string): { read: () => FlushReading; why: null } | { read: null; why: string } {
  try {
    return { read: flushCounter(dir), why: null };
  } catch (err) {
    return { read: null, why: (err as Error).message };
  }
}

/** Mean µs per flush between two readings; null when the disk completed none. */
export function usPerFlush(a: FlushReading, b: FlushReading): number | null {
  const n = b.flushes - a.flushes;
  return n > 0 ? Math.round(((b.ms - a.ms) * 1000) / n) : null;
}

/** µs per flush as ms with three decimals, '-' for none: how every bench prints it. */
export function msPerFlush(us: number | null): string {
  return us === null ? '-' : (us / 1000).toFixed(3);
}

/**
 * Readings taken as each segment began (`label` the segment's target), and
 * one more after the last: per target, the µs per flush of each segment
 * after its first (the first is its warm-up), in order, as the paired step's
 * rounds are.
 */
export function roundFlushes(
  starts: { label: string; at: FlushReading }[],
  end: FlushReading,
): Record<string, (number | null)[]> {
  const out: Record<string, (number | null)[]> = {};
  starts.forEach((s, i) => {
    const next = i + 1 < starts.length ? starts[i + 1].at : end;
    // A target's first segment is its warm-up: it only opens the target's list.
    if (out[s.label] === undefined) out[s.label] = [];
    else out[s.label].push(usPerFlush(s.at, next));
  });
  return out;
}
