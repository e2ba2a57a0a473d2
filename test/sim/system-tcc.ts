// TCC participants in the whole-system simulation: the production
// ParticipantEngine over the production MemoryTccResource (Try / Confirm /
// Cancel through the barrier, a journal of its own) and the production
// ReserveWatcher (an expired reserve asks the cluster to decide ABORT and
// applies the answer). The handlers reserve the keys of the simulation's
// usual payload (a hold per key), Confirm writes the values, Cancel releases
// the holds, so the world's atomicity check reads TCC participants like
// memory ones.
//
// The TCC checker reads the durable TCC journals at the end of a run:
//   barrier    no Try reserves after its Cancel (hanging Try); Confirm and
//              Cancel effects are each written at most once, never both
//   TTL        nothing is held once the world is quiet, and no reserve is
//              settled later than max(its Try, healing) + TTL + SLACK_MS
//
// Mutants for the checker's self-test are injected here, never in src/: a
// barrier rule that always runs the handler, and a watcher whose question
// answers ABORT without asking the cluster (a bare timer).
import { parsePayload } from '../../src/participant/memory.ts';
import {
  barrierStep,
  TccRefusal,
  type BarrierOp,
  type BarrierVerdict,
  type BranchState,
  type TccBranch,
} from '../../src/participant/tcc/barrier.ts';
import type { AskAbort } from '../../src/participant/tcc/expiry.ts';
import {
  MemoryTccResource,
  replayTcc,
  type TccMemoryHandlers,
  type TccRecord,
} from '../../src/participant/tcc/memory.ts';
import type { ClusterOutcome, TxnId } from '../../src/participant/types.ts';
import { Rng } from '../../src/raft/rng.ts';
import type { EventQueue } from './event-queue.ts';
import type { SystemChecker } from './system-checker.ts';
import { SimJournal, startIncarnation, type ParticipantWiring, type SimParticipant } from './system-participant.ts';
import type { Inc } from './system-rpc.ts';

export type TccMutant = 'tcc-no-barrier' | 'tcc-cancel-on-timer';

/** After healing: an election, the coordinator's longest transaction timeout and a question's backoff fit inside. */
export const SLACK_MS = 7_000;

/** The simulation's reservable store: committed data, and the keys each reserve holds. */
export interface SimTccState {
  data: Map<string, string>;
  holds: Map<string, TxnId>;
}

export function simTccHandlers(ttlMs: number): TccMemoryHandlers<SimTccState> {
  const writesOf = (b: TccBranch): ReadonlyMap<string, string> => {
    const parsed = parsePayload(b.payload);
    if (!parsed.ok) throw new TccRefusal(parsed.reason);
    return parsed.writes;
  };
  return {
    initial: () => ({ data: new Map(), holds: new Map() }),
    try(s, b) {
      const writes = writesOf(b);
      for (const k of writes.keys()) {
        const holder = s.holds.get(k);
        if (holder !== undefined && holder !== b.txnId) throw new TccRefusal(`key ${k} is reserved by ${holder}`);
      }
      for (const k of writes.keys()) s.holds.set(k, b.txnId);
      return { ttlMs };
    },
    confirm(s, b) {
      for (const [k, v] of writesOf(b)) {
        s.data.set(k, v);
        if (s.holds.get(k) === b.txnId) s.holds.delete(k);
      }
    },
    cancel(s, b) {
      for (const k of writesOf(b).keys()) if (s.holds.get(k) === b.txnId) s.holds.delete(k);
    },
    encode: (s) => JSON.stringify({ data: [...s.data], holds: [...s.holds] }),
    decode: (text) => {
      const v = JSON.parse(text) as { data: [string, string][]; holds: [string, string][] };
      return { data: new Map(v.data), holds: new Map(v.holds) };
    },
  };
}

/** The no-barrier mutant: every Try, Confirm and Cancel runs its handler whatever is on record. */
function noBarrier(txnId: TxnId, state: BranchState | undefined, op: BarrierOp): BarrierVerdict {
  const v = barrierStep(txnId, state, op);
  if (op === 'try') return { kind: 'run', next: 'tried' };
  if (op === 'confirm') return { kind: 'run', next: 'confirmed' };
  return state === undefined ? v : { kind: 'run', next: 'cancelled' };
}

export interface SimTcc {
  journal: SimJournal<TccRecord>;
  ttlMs: number;
  resource: MemoryTccResource<SimTccState> | null;
}

export interface TccWiring extends ParticipantWiring {
  askAbort: (inc: Inc, txnId: TxnId, reason: string, cb: (err: Error | null, o: ClusterOutcome) => void) => void;
  tccMutant?: TccMutant;
}

export function newSimTcc(q: EventQueue, rng: Rng): SimTcc {
  return { journal: new SimJournal<TccRecord>(q, new Rng(rng.u32())), ttlMs: 500 + rng.int(2_500), resource: null };
}

/**
 * startSimParticipant for a TCC participant: the TCC resource rebuilt from its journal, composed with the engine and
 * the watcher.
 */
export function startSimTccParticipant(p: SimParticipant, tcc: SimTcc, w: TccWiring): void {
  const handlers = simTccHandlers(tcc.ttlMs);
  const barrier = w.tccMutant === 'tcc-no-barrier' ? noBarrier : barrierStep;
  const inc: Inc = { alive: true };
  const resource = new MemoryTccResource({
    participantId: p.id,
    handlers,
    live: replayTcc(p.id, handlers, tcc.journal.durable, barrier),
    journal: { append: (r, cb) => inc.alive && tcc.journal.append(r, cb) },
    clock: { nowMs: () => w.q.now },
    barrier,
  });
  const askAbort: AskAbort =
    w.tccMutant === 'tcc-cancel-on-timer'
      ? (_txnId, _reason, cb) => cb(null, 'ABORTED')
      : (txnId, reason, cb) => w.askAbort(inc, txnId, reason, cb);
  startIncarnation(p, inc, w, { resource, records: p.journal.durable, tcc: { reserves: resource, askAbort } });
  tcc.resource = resource;
}

export function crashSimTcc(tcc: SimTcc): void {
  tcc.journal.crash();
  tcc.resource = null;
}

/** The TCC properties, read from the durable journals once the world is quiet (see the top of the file). */
export function checkTcc(checker: SystemChecker, parts: { id: string; tcc: SimTcc }[], healAtMs: number): void {
  for (const { id, tcc } of parts) {
    const held = tcc.resource?.heldReserves() ?? [];
    if (held.length > 0)
      checker.violation(
        `TCC: ${id} still holds reserves once the world is quiet: ${held.map((h) => h.txnId).join(' ')}`,
      );
    const seen = new Map<TxnId, { states: BranchState[]; triedAtMs: number }>();
    for (const r of tcc.journal.durable) {
      if (r.kind !== 'tcc') continue;
      const e = seen.get(r.txnId) ?? { states: [], triedAtMs: r.atMs };
      seen.set(r.txnId, e);
      if (r.state === 'tried' && e.states.some((s) => s === 'cancelled' || s === 'empty-cancelled'))
        checker.violation(
          `TCC hanging Try: ${id} reserved for ${r.txnId} at t=${r.atMs}ms after its Cancel (${e.states.join(', ')})`,
        );
      if (r.state === 'tried' && e.states.length === 0) e.triedAtMs = r.atMs;
      if (
        (r.state === 'confirmed' || r.state === 'cancelled') &&
        e.states.some((s) => s === 'confirmed' || s === 'cancelled')
      )
        checker.violation(
          `TCC barrier: ${id} applied ${r.state} to ${r.txnId} at t=${r.atMs}ms after ${e.states.join(', ')} (an effect applied twice)`,
        );
      if (
        (r.state === 'confirmed' || r.state === 'cancelled') &&
        r.atMs > Math.max(e.triedAtMs, healAtMs) + tcc.ttlMs + SLACK_MS
      )
        checker.violation(
          `TCC TTL: ${id} held the reserve of ${r.txnId} (tried at t=${e.triedAtMs}ms, TTL ${tcc.ttlMs} ms) until t=${r.atMs}ms, past healing + TTL + ${SLACK_MS} ms`,
        );
      e.states.push(r.state);
    }
  }
}
