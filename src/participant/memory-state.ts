// What the participant's journal amounts to, as a fold of its durable
// records: the committed key/value data, the prepared transactions (with
// their writes, i.e. their locks) and the recently decided ids. The file
// journal keeps one up to date as records become durable and writes
// snapshot() when it compacts; on start the runtime rebuilds the memory
// resource and the engine from it. Pure.
//
// The fold parses a prepared payload only when it has not been handed the
// writes already: the memory resource parsed every payload it voted YES on
// and hands its writes over (offerWrites), so in a running participant a
// committed record applies them without decoding the payload again. Replay on
// open parses, since nothing was handed over.
//
// Because it folds only records that are durable, a snapshot never contains
// an effect the journal had not yet recorded, whatever the engine and the
// resource hold in memory at that moment.
import { assert } from '../util/assert.ts';
import { OldestFirst } from '../util/oldest-first.ts';
import { parsePayload, type Writes } from './memory.ts';
import {
  fromBase64,
  type DataRecord,
  type JournalRecord,
  type Settled,
  type PreparedRecord,
  type TxnId,
  type TxnRecord,
} from './types.ts';

/** Decided ids a snapshot keeps, so duplicates of recent PREPAREs still get NO after a restart. */
export const SNAPSHOT_DECIDED_MAX = 10_000;
/** Key/value pairs per data record of a snapshot, so no single record grows without bound. */
export const DATA_RECORD_ENTRIES_MAX = 1_000;
/** Writes handed over and not yet folded; the oldest are dropped past it (they are parsed again when needed). */
export const OFFERED_WRITES_MAX = 20_000;

export class MemoryState {
  readonly data = new Map<string, string>();
  readonly prepared = new Map<TxnId, PreparedRecord>();
  /** Decision order (Map insertion order); bounded by decidedMax. Invariant: disjoint from `prepared`. */
  readonly decided = new Map<TxnId, { outcome: Settled; atMs: number }>();
  private readonly decidedMax: number;
  /** txnId → the writes its payload parses to, as the resource parsed them at PREPARE. */
  private readonly offered = new Map<TxnId, Writes>();
  private readonly oldestDecided = new OldestFirst(this.decided);
  private readonly oldestOffered = new OldestFirst(this.offered);

  constructor(decidedMax = SNAPSHOT_DECIDED_MAX) {
    assert(decidedMax >= 0, 'decidedMax >= 0');
    this.decidedMax = decidedMax;
  }

  /** The writes `txnId`'s payload parses to, from the resource that parsed it; spares the fold a parse. */
  offerWrites(txnId: TxnId, writes: Writes): void {
    this.offered.delete(txnId);
    this.offered.set(txnId, writes);
    this.oldestOffered.trimTo(OFFERED_WRITES_MAX);
  }

  add(r: JournalRecord): void {
    switch (r.kind) {
      case 'data':
        for (const [k, v] of r.entries) this.data.set(k, v);
        return;
      case 'prepared':
        // Prepared again after a forgotten decision (a very late duplicate PREPARE): in doubt again.
        this.decided.delete(r.txnId);
        this.prepared.set(r.txnId, r);
        return;
      case 'committed':
      case 'aborted':
      case 'refused': {
        const p = this.prepared.get(r.txnId);
        if (p !== undefined && r.kind === 'committed') for (const [k, v] of this.writesOf(p)) this.data.set(k, v);
        this.offered.delete(r.txnId);
        // A decided record with no prepared one before it is a snapshot's memory of a decided id.
        this.prepared.delete(r.txnId);
        this.decided.delete(r.txnId);
        this.decided.set(r.txnId, { outcome: r.kind, atMs: r.atMs });
        this.oldestDecided.trimTo(this.decidedMax);
        return;
      }
    }
  }

  /** Records that, replayed in order into an empty state, rebuild this one. */
  snapshot(): JournalRecord[] {
    const out: JournalRecord[] = [];
    let chunk: DataRecord = { kind: 'data', entries: [] };
    for (const e of this.data) {
      chunk.entries.push(e);
      if (chunk.entries.length === DATA_RECORD_ENTRIES_MAX) {
        out.push(chunk);
        chunk = { kind: 'data', entries: [] };
      }
    }
    if (chunk.entries.length > 0) out.push(chunk);
    out.push(...this.txnRecords());
    return out;
  }

  /** The transaction records the engine recovers from: decided ids in decision order, then what is still prepared. */
  txnRecords(): TxnRecord[] {
    const out: TxnRecord[] = [];
    for (const [txnId, d] of this.decided) out.push({ kind: d.outcome, txnId, atMs: d.atMs });
    for (const p of this.prepared.values()) out.push(p);
    return out;
  }

  /** The prepared transactions' writes, for MemoryResource.restore. */
  preparedWrites(): Map<TxnId, Writes> {
    const out = new Map<TxnId, Writes>();
    for (const [txnId, p] of this.prepared) out.set(txnId, this.writesOf(p));
    return out;
  }

  private writesOf(p: PreparedRecord): Writes {
    const offered = this.offered.get(p.txnId);
    if (offered !== undefined) return offered;
    const parsed = parsePayload(fromBase64(p.payloadB64));
    // The resource voted YES on this payload, so it parsed then; it must parse now.
    assert(parsed.ok, `journal: prepared ${p.txnId} has a payload that parses`);
    return parsed.ok ? parsed.writes : new Map();
  }
}
