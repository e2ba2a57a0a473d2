// Where a failover's in-doubt window goes, read back from one run's logs
// (nodes and participants at log level info; `bench/analysis/failover-only.ts
// --timeline`): when each survivor saw the stream to the killed leader
// break, when it became pre-candidate, candidate and leader, when each
// participant saw its Exchange stream break and first asked in vain, and
// when the participants' in-doubt transactions were resolved (from their
// journals). Every time is relative to the kill.
import { existsSync, readFileSync } from 'node:fs';

export interface TimelineEvent {
  /** Milliseconds after the kill (negative: before it). */
  relMs: number;
  who: string;
  what: string;
}

interface LogLine {
  time?: number;
  msg?: string;
  peer?: string;
  role?: string;
  term?: number;
  leader?: string | null;
  why?: string;
}

function lines(file: string): LogLine[] {
  if (!existsSync(file)) return [];
  const out: LogLine[] = [];
  for (const l of readFileSync(file, 'utf8').split('\n')) {
    if (!l.startsWith('{')) continue;
    try {
      out.push(JSON.parse(l) as LogLine);
    } catch {
      // A line cut by the kill: not an event.
    }
  }
  return out;
}

/**
 * The events of one run. `nodeLogs` and `participantLogs` map an id to its
 * log file; `decidedRelMs` holds each participant's in-doubt delays (from
 * its journal), of which the first and the last are reported.
 */
export function failoverTimeline(o: {
  killAtMs: number;
  killed: string;
  nodeLogs: Map<string, string>;
  participantLogs: Map<string, string>;
  decidedRelMs: Map<string, number[]>;
}): TimelineEvent[] {
  const ev: TimelineEvent[] = [];
  const at = (t: number | undefined): number => (t === undefined ? Number.NaN : t - o.killAtMs);
  for (const [id, file] of o.nodeLogs) {
    if (id === o.killed) continue;
    let sawBreak = false;
    for (const l of lines(file)) {
      if (l.time === undefined || l.time < o.killAtMs - 50) continue;
      if (!sawBreak && l.peer === o.killed && l.msg?.startsWith('stream to peer ended')) {
        sawBreak = true;
        ev.push({ relMs: at(l.time), who: id, what: `stream to ${o.killed} broke` });
      }
      if (l.msg === 'raft role changed')
        ev.push({
          relMs: at(l.time),
          who: id,
          what: `${l.role} in term ${l.term}${l.leader ? ` (leader ${l.leader})` : ''}`,
        });
    }
  }
  for (const [id, file] of o.participantLogs) {
    let asked = false;
    for (const l of lines(file)) {
      if (l.time === undefined || l.time < o.killAtMs - 50) continue;
      if (l.msg?.startsWith("the leader's Exchange stream broke"))
        ev.push({ relMs: at(l.time), who: id, what: 'Exchange stream broke; asking now' });
      if (!asked && l.msg === 'in doubt: outcome not known yet; asking again') {
        asked = true;
        ev.push({ relMs: at(l.time), who: id, what: `first ask unanswered: ${l.why ?? '?'}` });
      }
    }
    const d = o.decidedRelMs.get(id) ?? [];
    if (d.length > 0) {
      ev.push({ relMs: Math.min(...d), who: id, what: `first in-doubt transaction decided (of ${d.length})` });
      ev.push({ relMs: Math.max(...d), who: id, what: 'last in-doubt transaction decided' });
    }
  }
  return ev.filter((e) => Number.isFinite(e.relMs)).sort((a, b) => a.relMs - b.relMs);
}

export function formatTimeline(ev: TimelineEvent[]): string {
  return ev.map((e) => `  ${String(Math.round(e.relMs)).padStart(6)} ms  ${e.who.padEnd(4)} ${e.what}`).join('\n');
}
