// A participant whose prepared state lives in a database, in the
// whole-system simulation: the model of the PostgreSQL resource
// (src/participant/postgres.ts) that votes YES without waiting for its
// journal's sync. The database survives the participant's crash whole, as
// PostgreSQL's PREPARE TRANSACTION and commit marker do: prepared
// transactions (pg_prepared_xacts), what committed (the marker rows), and the
// data. Its journal is the same simulated disk as every participant's, and a
// crash loses what it had not written.
//
// A third of the transaction ids get a hashed name in the database (a long
// txn id at PostgreSQL), which recovery can only match through the journal:
// for them durableAtPrepare() is false and the engine syncs the prepared
// record before the vote. On restart the production reconcile()
// (src/participant/prepared-recovery.ts) merges the journal with the
// database's list before engine.recover(), as openPreparedParticipant does.
//
// Mutants, the checker's teeth (test/sim/system-dbprep.sim.test.ts):
//   db-no-adopt         recovery reads the journal only, ignoring the
//                       database's list of prepared transactions
//   db-hashed-unsynced  hashed names are called durable at prepare too, so
//                       their prepared record is not synced before the vote

import type { ParticipantEngine } from '../../src/participant/engine.ts';
import { MemoryResource } from '../../src/participant/memory.ts';
import type { ParsedGid } from '../../src/participant/postgres-gid.ts';
import { isTxnRecord, reconcile, TxnJournalState, type PreparedGid } from '../../src/participant/prepared-recovery.ts';
import {
  isDecisionRecord,
  type Outcome,
  type Resource,
  type ResourceVote,
  type TxnId,
  type TxnRecord,
} from '../../src/participant/types.ts';
import { participantEngine } from './protocol-mutants.ts';
import { simEngineOptions, type ParticipantWiring, type SimParticipant } from './system-participant.ts';
import type { Inc } from './system-rpc.ts';

export type DbMutant = 'db-no-adopt' | 'db-hashed-unsynced';
export const DB_MUTANTS: readonly DbMutant[] = ['db-no-adopt', 'db-hashed-unsynced'];

/** Whether the database names T by a hash (a long txn id): deterministic, about a third of the ids. */
export function hashedName(txnId: TxnId): boolean {
  let h = 0;
  for (let i = 0; i < txnId.length; i++) h = (h * 31 + txnId.charCodeAt(i)) >>> 0;
  return h % 3 === 0;
}

/** The participant's database: outlives every incarnation of the participant process. */
export class SimDatabase {
  /** The data and the locks of prepared transactions (MemoryResource's prepared map is the list of prepared ones). */
  readonly data = new MemoryResource();
  private readonly prepared = new Set<TxnId>();
  /** The commit markers: what committed here. */
  private readonly committed = new Set<TxnId>();
  private readonly aborted = new Set<TxnId>();

  /**
   * T's name in the database; after '#' stands what PostgreSQL's gid holds in its place, T's hash, which only the
   * journal maps back.
   */
  gid(txnId: TxnId): string {
    return hashedName(txnId) ? `db:#${txnId}` : `db:${txnId}`;
  }

  /** pg_prepared_xacts: hashed names do not give their txn id back. */
  listPrepared(): PreparedGid[] {
    return [...this.prepared].map((txnId) => {
      const parsed: ParsedGid = hashedName(txnId) ? { kind: 'hashed' } : { kind: 'readable', txnId };
      return { gid: this.gid(txnId), parsed, preparedAtMs: 0, ageMs: 0 };
    });
  }

  /** What the database says of T once it is decided here (the marker, or a rollback), for the checker. */
  decided(txnId: TxnId): Outcome | undefined {
    return this.committed.has(txnId) ? 'COMMITTED' : this.aborted.has(txnId) ? 'ABORTED' : undefined;
  }

  /**
   * The resource of one incarnation, reporting every decision it applies (or finds applied) while that incarnation
   * lives.
   */
  resource(inc: Inc, mutant: DbMutant | undefined, onApply: (txnId: TxnId, outcome: Outcome) => void): Resource {
    const db = this;
    const report = (txnId: TxnId, outcome: Outcome): void => {
      if (inc.alive) onApply(txnId, outcome);
    };
    return {
      prepare(txnId: TxnId, payload: Uint8Array, cb: (err: Error | null, vote: ResourceVote) => void): void {
        // The gid is taken (still prepared, or its marker row is there): PostgreSQL refuses a second PREPARE.
        if (db.prepared.has(txnId) || db.committed.has(txnId))
          return cb(null, { yes: false, reason: `gid ${db.gid(txnId)} is taken` });
        db.data.prepare(txnId, payload, (err, vote) => {
          if (err === null && vote.yes) db.prepared.add(txnId);
          cb(err, vote);
        });
      },
      commit(txnId: TxnId, cb: (err: Error | null) => void): void {
        if (db.prepared.has(txnId)) {
          db.prepared.delete(txnId);
          db.committed.add(txnId);
          return db.data.commit(txnId, (err) => {
            report(txnId, 'COMMITTED');
            cb(err);
          });
        }
        // Not prepared: a redelivery when the marker is there, else a hazard (HEURRB), as DbResource answers.
        if (db.committed.has(txnId)) {
          report(txnId, 'COMMITTED');
          return cb(null);
        }
        cb(new Error(`HEURRB hazard for ${txnId}: not prepared and no commit marker`));
      },
      abort(txnId: TxnId, cb: (err: Error | null) => void): void {
        if (db.committed.has(txnId)) return cb(new Error(`HEURCOM hazard for ${txnId}: its commit marker is there`));
        if (db.prepared.has(txnId)) {
          db.prepared.delete(txnId);
          db.aborted.add(txnId);
          return db.data.abort(txnId, (err) => {
            report(txnId, 'ABORTED');
            cb(err);
          });
        }
        report(txnId, 'ABORTED');
        cb(null);
      },
      durableAtPrepare(txnId: TxnId): boolean {
        return mutant === 'db-hashed-unsynced' || !hashedName(txnId);
      },
    };
  }
}

/**
 * startSimParticipant for a participant over a SimDatabase: the journal's
 * records reconciled with the database's prepared list, into the production
 * engine.
 */
export function startSimDbParticipant(
  p: SimParticipant,
  db: SimDatabase,
  w: ParticipantWiring & { dbMutant?: DbMutant },
): void {
  const inc: Inc = { alive: true };
  p.inc = inc;
  const state = new TxnJournalState();
  for (const r of p.journal.durable) if (isTxnRecord(r)) state.add(r);
  const records =
    w.dbMutant === 'db-no-adopt'
      ? state.txnRecords()
      : reconcile(state.txnRecords(), db.listPrepared(), (txnId) => db.gid(txnId)).records;
  const resource = db.resource(inc, w.dbMutant, (txnId, outcome) => {
    w.applied(txnId, outcome);
    w.checker.participantApplied(p.id, txnId, outcome);
  });
  // As openPreparedParticipant sets FileJournal's deferred: decisions, and prepared records the database holds.
  const deferred = (r: TxnRecord): boolean =>
    isDecisionRecord(r) || (r.kind === 'prepared' && resource.durableAtPrepare?.(r.txnId) === true);
  const engine: ParticipantEngine = participantEngine(
    {
      ...simEngineOptions(p, w, inc),
      resource,
      journal: { append: (r, cb) => inc.alive && p.journal.append(r, cb, deferred(r)) },
    },
    w.mutant,
  );
  engine.recover(records);
  engine.start();
  p.engine = engine;
  p.resource = db.data;
  p.up = true;
  // What this participant knows of T after the crash: the engine's state, or what its database decided (the marker).
  w.checker.participantRecovered(p.id, (txnId) => engine.stateOf(txnId) ?? db.decided(txnId));
}
