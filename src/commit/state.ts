// The replicated decision table: the state machine that the Raft log feeds.
// Every node applies the same commands in the same order, so every node
// holds the same table. Pure and deterministic: time comes inside commands
// (the leader's clock when it proposed them), never from here.
//
// R1 lives here: the first Decide(T) applied wins; a later one is a no-op
// that returns the decision already made. So does the retention horizon: the
// newest creation time of a timed transaction id (src/domain/txn-id.ts) whose
// decision has left the table for good, below which no id can be proved new.

import type { DecisionOutcome } from '../domain/protocol.ts';
import type { ProductApplyResult, ProductCommand } from './product-table.ts';
import { beyondHorizon } from '../domain/id-newness.ts';
import { txnIdAtMs } from '../domain/txn-id.ts';
import { assert } from '../util/assert.ts';
import { OldestFirst } from '../util/oldest-first.ts';

export interface ParticipantRecord {
  id: string;
  endpoint: string;
  registeredAtMs: number;
  /** What it keeps its data in, as it said at registration (RESOURCE_KIND); "unknown" when it did not say. */
  resourceKind: string;
  /**
   * The optional protocol methods it serves, as it said at registration
   * (src/domain/protocol.ts, OptionalMethod), sorted; empty for a participant
   * that did not say, and for one registered before the field existed.
   */
  serves: readonly string[];
}

/**
 * A resource kind as a participant names it: a short lower-case word (memory, postgres, mysql, tcc-postgres,
 * saga-memory, ...).
 */
export const RESOURCE_KIND = /^[a-z][a-z0-9-]{0,31}$/;
export const RESOURCE_KIND_UNKNOWN = 'unknown';

export interface Decision {
  txnId: string;
  outcome: DecisionOutcome;
  reason: string;
  participants: string[];
  /** The log index where this decision was applied. */
  index: number;
  decidedAtMs: number;
}

/**
 * An operator's act on the cluster side (`verdict txn resolve`): who asked,
 * when, why. Recorded against the transaction when the outcome it asked for
 * is the logged one (it decided an undecided transaction, or confirmed a
 * decided one); an act contrary to the decision is refused and not recorded.
 */
export interface OperatorAct {
  operator: string;
  reason: string;
  atMs: number;
}

export interface Resolution extends OperatorAct {
  outcome: DecisionOutcome;
  /** True when this act made the decision; false when it confirmed one already logged. */
  decided: boolean;
  index: number;
}

/**
 * X/Open XA's names for a participant that decided alone (R4), compared with
 * the cluster's decision when the act is reported:
 *   HEURCOM  committed by hand, and the decision is COMMIT (consistent)
 *   HEURRB   rolled back by hand, and the decision is ABORT (consistent)
 *   HEURMIX  the hand and the decision disagree: AC1 is broken for this transaction
 *   HEURHAZ  no decision can be found to compare with (forgotten and out of the tombstones)
 */
export type HeuristicKind = 'HEURCOM' | 'HEURRB' | 'HEURMIX' | 'HEURHAZ';
export const HEURISTIC_KINDS: readonly HeuristicKind[] = ['HEURCOM', 'HEURRB', 'HEURMIX', 'HEURHAZ'];

export interface HeuristicRecord extends OperatorAct {
  txnId: string;
  participantId: string;
  /** What the participant's operator did. */
  outcome: DecisionOutcome;
  /** The participant's name of the transaction there (a PostgreSQL gid), for the incident report. */
  gid: string;
  kind: HeuristicKind;
  /** The cluster's decision at the time of the report, when known. */
  decision: DecisionOutcome | null;
  index: number;
}

/**
 * A STAGING record (parallel commit, docs/protocol.md): the leader that
 * began T replicates it in parallel with PREPARE. T is committed once it is
 * applied and every participant it names holds a durable YES; until a
 * decision is applied, a new leader decides T by recovery, never by a plain
 * presumed abort (src/commit/parallel-commit.ts).
 */
export interface Staging {
  txnId: string;
  participants: string[];
  /** The log index where it was applied. */
  index: number;
  atMs: number;
}

/** A command the decision table applies. */
export type DecisionCommand =
  // `kind` is absent from registrations logged before resource kinds existed.
  // `serves` is absent from registrations logged before it existed: they serve nothing optional.
  | { t: 'register'; id: string; endpoint: string; atMs: number; kind: string; serves?: string[] }
  // `verdict participant remove`: the participant leaves the registry, unless a
  // decision in the table still names it and is not in `acked` (the decisions
  // the leader saw it acknowledge; the table itself does not track ACKs).
  // `force` (`verdict participant remove --force`): a participant gone for good leaves the
  // registry although decisions still name it; they stay in the table, owed to it, and are no
  // longer delivered (the leader stops; GetOutcome still answers them if it returns).
  | { t: 'unregister'; id: string; operator: string; atMs: number; acked: string[]; force?: true; reason?: string }
  // `operator` is set when `verdict txn resolve` asked for this outcome.
  // `trace`: the W3C traceparent the leader's spans for T continued, so every node's log lines and a
  // later leader's DECISIONs join the application's trace (only in a decision batch; never read by the table).
  | {
      t: 'decide';
      txnId: string;
      outcome: DecisionOutcome;
      reason: string;
      participants: string[];
      atMs: number;
      operator?: OperatorAct;
      trace?: string;
    }
  | { t: 'forget'; txnIds: string[] }
  // Parallel commit: T's participants, replicated in parallel with PREPARE.
  | { t: 'stage'; txnId: string; participants: string[]; atMs: number; trace?: string }
  | {
      t: 'heuristic';
      txnId: string;
      participantId: string;
      outcome: DecisionOutcome;
      gid: string;
      operator: string;
      reason: string;
      atMs: number;
    };

/** A JSON command entry: the decision table's, or a product table's riding the same log (./product-table.ts). */
export type Command = DecisionCommand | ProductCommand;

/** What applying a decision table command did. */
export type DecisionApplyResult =
  // `returned`: it had been removed with --force; the decisions still owed to it are delivered again.
  | { t: 'register'; participant: ParticipantRecord; returned: boolean }
  // `refusedBy`: the decisions that still name the participant (it stays registered); empty when removed or absent.
  | { t: 'unregister'; id: string; removed: boolean; refusedBy: string[]; forced: RemovedParticipant | null }
  // `trace`: the command's, passed on for observers (absent when untraced).
  | { t: 'decide'; decision: Decision; first: boolean; resolution: Resolution | null; trace?: string }
  // `txnIds`: the command's ids, for observers (the console's timeline, the simulator's crash points).
  | { t: 'forget'; forgotten: number; txnIds: readonly string[] }
  // `staging` null: T was decided first (the record is a no-op and `decision` says how).
  | { t: 'stage'; txnId: string; staging: Staging | null; decision: Decision | null; trace?: string }
  | { t: 'heuristic'; record: HeuristicRecord; first: boolean };

export type ApplyResult =
  | DecisionApplyResult
  // A product table's (./product-table.ts): the node routes it to that product's engine.
  | ProductApplyResult
  // A decision batch entry (./decision-batch.ts): one result per record.
  | BatchApplyResult;

/** The result of applying a decision batch entry (./decision-batch.ts): one result per record, in order. */
export interface BatchApplyResult {
  t: 'batch';
  results: ApplyResult[];
}

/** Compares what a participant did by hand with the cluster's decision. Pure. */
export function heuristicKind(done: DecisionOutcome, decision: DecisionOutcome | null): HeuristicKind {
  if (decision === null) return 'HEURHAZ';
  if (done !== decision) return 'HEURMIX';
  return done === 'commit' ? 'HEURCOM' : 'HEURRB';
}

/**
 * A participant removed with `--force` while decisions still named it: the
 * operator's act (who, when, why) and the decisions it never acknowledged.
 * Those stay in the table (never forgotten: R5 for a COMMIT, and an answer
 * for it if it ever returns), and are not delivered while it is away.
 */
export interface RemovedParticipant extends OperatorAct {
  id: string;
  endpoint: string;
  index: number;
  /** Decisions it had not acknowledged when removed. */
  owed: string[];
}

/** Removed participants remembered at once; beyond the bound the oldest go (their decisions stay owed). */
export const REMOVED_MAX = 1_000;

/** A forgotten decision still answers outcome queries for a while. */
export interface Tombstone {
  outcome: DecisionOutcome;
  reason: string;
  index: number;
}

export const TOMBSTONES_MAX = 100_000;
/**
 * Transactions with heuristic records or operator resolutions kept at once.
 * They survive Forget (an incident outlives the decision's delivery); beyond
 * the bound the oldest go, and a warning says so in the node's log.
 */
export const INCIDENTS_MAX = 10_000;
/** Heuristic records or resolutions kept per transaction: one per participant, plus repeated operator confirmations. */
const PER_TXN_MAX = 64;

export class DecisionTable {
  readonly participants = new Map<string, ParticipantRecord>();
  /** Decisions not yet forgotten: COMMITs wait for every ACK (R5). */
  readonly decisions = new Map<string, Decision>();
  /** Forgotten decisions, oldest first, bounded; Map keeps insertion order. */
  readonly tombstones = new Map<string, Tombstone>();
  /** Heuristic outcomes reported by participants, by transaction, oldest first; kept after Forget. */
  readonly heuristics = new Map<string, HeuristicRecord[]>();
  /** Operators' `txn resolve` acts, by transaction, oldest first; kept after Forget. */
  readonly resolutions = new Map<string, Resolution[]>();
  private readonly oldestTombstone = new OldestFirst(this.tombstones);
  private readonly oldestHeuristic = new OldestFirst(this.heuristics);
  private readonly oldestResolution = new OldestFirst(this.resolutions);
  /**
   * The retention horizon: the latest creation time (Unix ms) of a timed id
   * whose tombstone was evicted; null while none was. Every timed id at or
   * before it may have been decided and forgotten, so the engine refuses to
   * begin one (an answered outcome never changes). Only grows.
   */
  horizonAtMs: number | null = null;
  /**
   * STAGING records with no decision yet (parallel commit). A record leaves
   * when T's first Decide is applied; bounded by what leaders stage, which
   * each bounds by inFlightMax.
   */
  readonly staged = new Map<string, Staging>();
  /** Participants removed with --force, oldest first, bounded by REMOVED_MAX. */
  readonly removed = new Map<string, RemovedParticipant>();
  private readonly oldestRemoved = new OldestFirst(this.removed);
  constructor(
    private readonly tombstonesMax = TOMBSTONES_MAX,
    private readonly incidentsMax = INCIDENTS_MAX,
  ) {}

  /**
   * Applies one committed command. Commands were checked where they entered
   * the node (entryProblem, ./command-check.ts); what is asserted here is
   * the table's own bookkeeping.
   */
  apply(cmd: DecisionCommand, index: number): DecisionApplyResult {
    assert(Number.isSafeInteger(index) && index >= 0, `a command is applied at a log index, not ${index}`);
    switch (cmd.t) {
      case 'register':
        return this.applyRegister(cmd);
      case 'unregister':
        return this.applyUnregister(cmd, index);
      case 'decide':
        return this.applyDecide(cmd, index);
      case 'stage':
        return this.applyStage(cmd, index);
      case 'heuristic':
        return this.applyHeuristic(cmd, index);
      case 'forget':
        return this.applyForget(cmd);
    }
  }

  /**
   * A registration: the participant joins (or its endpoint changes); one removed with --force is owed its decisions
   * again.
   */
  private applyRegister(cmd: Extract<DecisionCommand, { t: 'register' }>): DecisionApplyResult {
    const p: ParticipantRecord = {
      id: cmd.id,
      endpoint: cmd.endpoint,
      registeredAtMs: this.participants.get(cmd.id)?.registeredAtMs ?? cmd.atMs,
      resourceKind: cmd.kind,
      serves: cmd.serves ?? [],
    };
    this.participants.set(cmd.id, p);
    // A participant removed with --force that registers again is owed its decisions again.
    const returned = this.removed.delete(cmd.id);
    return { t: 'register', participant: p, returned };
  }

  /** `verdict participant remove`: refused while a decision still names the participant, unless forced. */
  private applyUnregister(cmd: Extract<DecisionCommand, { t: 'unregister' }>, index: number): DecisionApplyResult {
    // Checked again here, where every node sees the same table: a
    // decision that names the participant still has to reach it (R5), so
    // the registry keeps its endpoint until that decision is forgotten.
    const acked = new Set(cmd.acked);
    const refusedBy = [...this.decisions.values()]
      .filter((d) => d.participants.includes(cmd.id) && !acked.has(d.txnId))
      .map((d) => d.txnId);
    if (refusedBy.length > 0 && cmd.force === true) {
      const record = this.participants.get(cmd.id);
      if (record === undefined) return { t: 'unregister', id: cmd.id, removed: false, refusedBy: [], forced: null };
      this.participants.delete(cmd.id);
      const forced: RemovedParticipant = {
        id: cmd.id,
        endpoint: record.endpoint,
        operator: cmd.operator,
        reason: cmd.reason ?? '',
        atMs: cmd.atMs,
        index,
        owed: refusedBy,
      };
      this.removed.delete(cmd.id);
      this.removed.set(cmd.id, forced);
      this.oldestRemoved.trimTo(REMOVED_MAX);
      return { t: 'unregister', id: cmd.id, removed: true, refusedBy: [], forced };
    }
    if (refusedBy.length > 0) return { t: 'unregister', id: cmd.id, removed: false, refusedBy, forced: null };
    return { t: 'unregister', id: cmd.id, removed: this.participants.delete(cmd.id), refusedBy: [], forced: null };
  }

  /**
   * A Decide: the first for T records the outcome (R1); a later one is a no-op that may add participants of the same
   * outcome.
   */
  private applyDecide(cmd: Extract<DecisionCommand, { t: 'decide' }>, index: number): DecisionApplyResult {
    let existing = this.lookup(cmd.txnId);
    if (existing && existing.outcome === cmd.outcome) {
      // A later Decide with the same outcome may name participants the decision did not (a new
      // leader learns who may be prepared from a client's retried Commit): they are added, and a
      // forgotten decision lives again, so it is delivered to them too (R5). The outcome never changes.
      const added = cmd.participants.filter((p) => !existing?.participants.includes(p));
      if (added.length > 0) {
        assert(
          existing.outcome === cmd.outcome,
          `${cmd.txnId}: participants join only a decision of the same outcome (R1)`,
        );
        const live: Decision = {
          ...existing,
          participants: [...existing.participants, ...added],
          decidedAtMs: existing.decidedAtMs || cmd.atMs,
        };
        this.tombstones.delete(cmd.txnId);
        this.decisions.set(cmd.txnId, live);
        existing = live;
      }
    }
    if (existing) {
      // R1: a later Decide is a no-op. An operator who asked for the outcome already logged is still recorded.
      const resolution =
        cmd.operator && existing.outcome === cmd.outcome
          ? this.recordResolution(cmd.txnId, { ...cmd.operator, outcome: cmd.outcome, decided: false, index })
          : null;
      return cmd.trace === undefined
        ? { t: 'decide', decision: existing, first: false, resolution }
        : { t: 'decide', decision: existing, first: false, resolution, trace: cmd.trace };
    }
    // R1: the first Decide(T) finds T nowhere in the table, live or forgotten.
    assert(
      !this.decisions.has(cmd.txnId) && !this.tombstones.has(cmd.txnId),
      `${cmd.txnId}: a first decision is not already in the table`,
    );
    assert(
      cmd.outcome === 'commit' || cmd.outcome === 'abort',
      `${cmd.txnId}: a decided outcome is COMMIT or ABORT (checked at the edge)`,
    );
    const d: Decision = {
      txnId: cmd.txnId,
      outcome: cmd.outcome,
      reason: cmd.reason,
      participants: cmd.participants,
      index,
      decidedAtMs: cmd.atMs,
    };
    this.decisions.set(cmd.txnId, d);
    this.staged.delete(cmd.txnId);
    const resolution = cmd.operator
      ? this.recordResolution(cmd.txnId, { ...cmd.operator, outcome: cmd.outcome, decided: true, index })
      : null;
    return cmd.trace === undefined
      ? { t: 'decide', decision: d, first: true, resolution }
      : { t: 'decide', decision: d, first: true, resolution, trace: cmd.trace };
  }

  /** Parallel commit's STAGING record: kept until T is decided; a decided T stays decided (R1). */
  private applyStage(cmd: Extract<DecisionCommand, { t: 'stage' }>, index: number): DecisionApplyResult {
    // A decided T stays decided (R1): the record changes nothing. A repeated one keeps the first.
    const decision = this.lookup(cmd.txnId);
    if (decision) return { t: 'stage', txnId: cmd.txnId, staging: null, decision };
    let staging = this.staged.get(cmd.txnId);
    if (!staging) {
      staging = { txnId: cmd.txnId, participants: [...cmd.participants], index, atMs: cmd.atMs };
      this.staged.set(cmd.txnId, staging);
    }
    return cmd.trace === undefined
      ? { t: 'stage', txnId: cmd.txnId, staging, decision: null }
      : { t: 'stage', txnId: cmd.txnId, staging, decision: null, trace: cmd.trace };
  }

  /** A participant's heuristic act, recorded once (R7). */
  private applyHeuristic(cmd: Extract<DecisionCommand, { t: 'heuristic' }>, index: number): DecisionApplyResult {
    const list = this.heuristics.get(cmd.txnId) ?? [];
    // R7: a participant reports its act until the cluster acknowledges it; a repeat returns the first record.
    const seen = list.find((h) => h.participantId === cmd.participantId);
    if (seen) return { t: 'heuristic', record: seen, first: false };
    const decision = this.lookup(cmd.txnId)?.outcome ?? null;
    const record: HeuristicRecord = {
      txnId: cmd.txnId,
      participantId: cmd.participantId,
      outcome: cmd.outcome,
      gid: cmd.gid,
      operator: cmd.operator,
      reason: cmd.reason,
      atMs: cmd.atMs,
      kind: heuristicKind(cmd.outcome, decision),
      decision,
      index,
    };
    this.incident(this.heuristics, this.oldestHeuristic, cmd.txnId, record);
    return { t: 'heuristic', record, first: true };
  }

  /** Every participant acknowledged (R5): the decisions go to the tombstones. */
  private applyForget(cmd: Extract<DecisionCommand, { t: 'forget' }>): DecisionApplyResult {
    let n = 0;
    for (const id of cmd.txnIds) {
      const d = this.decisions.get(id);
      if (!d) continue;
      this.decisions.delete(id);
      this.bury(id, { outcome: d.outcome, reason: d.reason, index: d.index });
      n++;
    }
    return { t: 'forget', forgotten: n, txnIds: cmd.txnIds };
  }

  /**
   * True when `txnId` is a timed id at or before the retention horizon with
   * no decision in the table: it may have been decided and forgotten, so the
   * table can no longer tell what its outcome was. (An untimed id's history
   * cannot be bounded this way; see src/domain/txn-id.ts.)
   */
  beyondHorizon(txnId: string): boolean {
    return this.lookup(txnId) === null && beyondHorizon(txnId, this.horizonAtMs);
  }

  /** The participants removed with --force that the decision of `txnId` is still owed to. */
  owedToRemoved(txnId: string): string[] {
    if (this.removed.size === 0) return [];
    const out: string[] = [];
    for (const r of this.removed.values()) if (r.owed.includes(txnId)) out.push(r.id);
    return out;
  }

  /** The decision for `txnId`, live or remembered by a tombstone. */
  lookup(txnId: string): Decision | null {
    const d = this.decisions.get(txnId);
    if (d) return d;
    const t = this.tombstones.get(txnId);
    if (t) return { txnId, outcome: t.outcome, reason: t.reason, participants: [], index: t.index, decidedAtMs: 0 };
    return null;
  }

  private recordResolution(txnId: string, r: Resolution): Resolution {
    this.incident(this.resolutions, this.oldestResolution, txnId, r);
    return r;
  }

  /**
   * Appends to a transaction's incident list, within the bounds (oldest transactions, then oldest entries, go first).
   */
  private incident<T>(map: Map<string, T[]>, oldest: OldestFirst<string, T[]>, txnId: string, item: T): void {
    const list = map.get(txnId) ?? [];
    list.push(item);
    if (list.length > PER_TXN_MAX) list.splice(0, list.length - PER_TXN_MAX);
    map.set(txnId, list);
    oldest.trimTo(this.incidentsMax);
  }

  private bury(txnId: string, t: Tombstone): void {
    // A decision is live or forgotten, never both.
    assert(!this.decisions.has(txnId), `${txnId}: only a decision that left the table is buried`);
    this.tombstones.set(txnId, t);
    this.oldestTombstone.trimTo(this.tombstonesMax, (oldest) => {
      const idAtMs = txnIdAtMs(oldest);
      if (idAtMs !== null && (this.horizonAtMs === null || idAtMs > this.horizonAtMs)) this.horizonAtMs = idAtMs;
    });
    assert(this.tombstones.size <= this.tombstonesMax, `tombstones stay within ${this.tombstonesMax}`);
  }

  /**
   * The table's part of a snapshot, with `sections` (the product tables',
   * by key: ./product-table.ts) after the horizon and before the staged
   * records: where the saga table's section has been since sagas joined the
   * format. JSON keeps key order, so this order is part of the bytes.
   */
  toJSON(sections: Readonly<Record<string, unknown>> = {}): unknown {
    return {
      p: [...this.participants.values()],
      d: [...this.decisions.values()],
      t: [...this.tombstones],
      h: [...this.heuristics],
      r: [...this.resolutions],
      hz: this.horizonAtMs,
      ...sections,
      st: [...this.staged.values()],
      // Only when there is one: a snapshot without forced removals keeps its bytes.
      ...(this.removed.size > 0 ? { rm: [...this.removed.values()] } : {}),
    };
  }

  restoreFrom(json: unknown): void {
    if (json === null || typeof json !== 'object') throw new Error('the snapshot has no decision table');
    const o = json as {
      p: ParticipantRecord[];
      d: Decision[];
      t: [string, Tombstone][];
      h: [string, HeuristicRecord[]][];
      r: [string, Resolution[]][];
      hz: number | null;
      st: Staging[];
      rm?: RemovedParticipant[];
    };
    for (const k of ['p', 'd', 't', 'h', 'r', 'st'] as const) {
      if (!Array.isArray(o[k])) throw new Error(`decision table in the snapshot is malformed: ${k} is not a list`);
    }
    if (
      o.rm !== undefined &&
      !(
        Array.isArray(o.rm) &&
        o.rm.every((r) => r !== null && typeof r === 'object' && typeof r.id === 'string' && Array.isArray(r.owed))
      )
    )
      throw new Error('decision table in the snapshot is malformed: rm is not a list of removed participants');
    if (o.hz !== null && typeof o.hz !== 'number')
      throw new Error('decision table in the snapshot is malformed: hz is neither a time nor null');
    if (!o.p.every((p) => p !== null && typeof p === 'object' && typeof p.resourceKind === 'string'))
      throw new Error('a participant in the snapshot is malformed: no resource kind');
    const servesOk = (v: unknown): boolean =>
      v === undefined || (Array.isArray(v) && v.every((m) => typeof m === 'string'));
    if (!o.p.every((p) => servesOk((p as { serves?: unknown }).serves)))
      throw new Error('a participant in the snapshot is malformed: serves is not a list of names');
    this.participants.clear();
    this.decisions.clear();
    this.tombstones.clear();
    this.heuristics.clear();
    this.resolutions.clear();
    this.staged.clear();
    this.removed.clear();
    for (const r of o.rm ?? []) this.removed.set(r.id, r);
    for (const st of o.st) this.staged.set(st.txnId, st);
    // A snapshot taken before `serves` existed: those participants serve nothing optional (they registered so).
    for (const p of o.p) this.participants.set(p.id, { ...p, serves: Array.isArray(p.serves) ? p.serves : [] });
    for (const d of o.d) this.decisions.set(d.txnId, d);
    for (const [k, v] of o.t) this.tombstones.set(k, v);
    for (const [k, v] of o.h) this.heuristics.set(k, v);
    for (const [k, v] of o.r) this.resolutions.set(k, v);
    this.horizonAtMs = o.hz;
  }
}

/** The first byte of a JSON command entry. */
export const TAG_COMMAND = 0x02;

export function encodeCommand(cmd: Command): Uint8Array {
  const json = JSON.stringify(cmd);
  // One allocation, written in place (this runs once per transaction on the leader).
  const out = Buffer.alloc(Buffer.byteLength(json, 'utf8') + 1);
  out[0] = TAG_COMMAND;
  out.write(json, 1, 'utf8');
  return out;
}

export function isCommand(data: Uint8Array): boolean {
  return data.byteLength > 0 && data[0] === TAG_COMMAND;
}

export function decodeCommand(data: Uint8Array): Command {
  // A view, not a copy: this runs for every applied entry on every node.
  return JSON.parse(Buffer.from(data.buffer, data.byteOffset + 1, data.byteLength - 1).toString('utf8')) as Command;
}
