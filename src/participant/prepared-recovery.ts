// Recovery and watch of a participant whose prepared state lives in a
// database (PostgreSQL's PREPARE TRANSACTION, MySQL/MariaDB's XA PREPARE):
// how the engine's journal and the database's own list of prepared
// transactions fit together. One copy for every such resource; each adapter
// supplies a PreparedResource (src/participant/postgres.ts,
// src/participant/resources/mysql/resource.ts).
//
// "gid" below is the database's name of one prepared transaction: PostgreSQL's
// gid, or the text form of an XA xid.
//
// Two records of "prepared" exist. The database's list (pg_prepared_xacts,
// XA RECOVER) is the durable prepared state itself (the database flushes its
// prepare before the resource says yes, R4). The engine's journal lists the
// transactions this participant voted YES on and those it decided, which is
// what the engine needs for duplicate PREPAREs and redelivered decisions (R7),
// and the only link from a hashed gid to its txn id. It holds no data. Its
// prepared record is synced before the vote unless the resource says the
// database alone finds T again (Resource.durableAtPrepare: PostgreSQL and MySQL, for
// readable gids and xids); then it starts no sync of its own and rides in the next
// frame, usually its decision's (a lazy record, journal.ts).
//
// On start, reconcile() merges them before engine.recover():
//
//   in the journal and in the database        in doubt, as usual
//   in the journal only                       in doubt too: the decision was
//                                             applied in the database but its
//                                             record did not reach the journal;
//                                             re-applying it is answered by the
//                                             commit marker (idempotent)
//   in the database only                      in doubt too (adopted): a crash
//                                             between the database's prepare and
//                                             the journal's sync (before or, for a
//                                             readable gid, after the vote); the
//                                             engine asks the cluster like for any other
//   a hashed gid known to neither             left alone and reported: its txn id
//                                             cannot be asked about, and a
//                                             participant never decides alone (R4)
//
// While running, PreparedMonitor scans the database every scanIntervalMs: a
// prepared gid the engine does not hold as prepared (after a failed rollback,
// say) and older than orphanAfterMs is resolved by asking the cluster and
// applying its answer; one older than stuckAfterMs (5 minutes by default) is
// logged as a warning with its txn id, gid, age and the cluster's answer, and
// counted in the resource's preparedStats() (exported as metrics). Old commit
// markers are deleted every markerCleanupIntervalMs.
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { ParticipantEngine } from './engine.ts';
import type { HeuristicAct } from './heuristic.ts';
import { FileJournal, type JournalFold, type JournalStats } from './journal.ts';
import { OldestFirst } from '../util/oldest-first.ts';
import type { ParsedGid } from './postgres-gid.ts';
import {
  isJournalRecord,
  isDecisionRecord,
  withDefaults,
  type AskOutcome,
  type ClusterOutcome,
  type EngineLog,
  type Journal,
  type Outcome,
  type PreparedRecord,
  type Resource,
  type TxnId,
  type Settled,
  type TxnRecord,
} from './types.ts';

/** One prepared transaction of this participant, as the database lists it. */
export interface PreparedGid {
  gid: string;
  /** The txn id the gid names, when it is readable; hashed gids are matched by the caller. */
  parsed: ParsedGid;
  preparedAtMs: number;
  ageMs: number;
}

/** Values for metrics and alerts, as of the last scan of the database. */
export interface PreparedStats {
  count: number;
  oldestAgeMs: number;
  /** Older than stuckAfterMs. */
  stuck: number;
  scannedAtMs: number;
}

/** What recovery, the monitor and the heuristic reporter need of a database resource. */
export interface PreparedResource extends Resource {
  /** 'PostgreSQL', 'MySQL': for log lines. */
  readonly kind: string;
  /** How an operator finishes a prepared transaction by hand, for log lines. */
  readonly byHand: string;
  readonly stuckAfterMs: number;
  gid(txnId: TxnId): string;
  txnIdOfGid(gid: string): TxnId | undefined;
  /** This participant's prepared transactions, oldest first; also updates preparedStats(). */
  listPrepared(): Promise<PreparedGid[]>;
  preparedStats(): PreparedStats;
  commitAsync(txnId: TxnId): Promise<void>;
  abortAsync(txnId: TxnId): Promise<void>;
  cleanupMarkers(): Promise<number>;
  unreportedHeuristics(rowsMax?: number): Promise<HeuristicAct[]>;
  markHeuristicReported(gid: string): Promise<void>;
  describeError(err: unknown): string;
  close(): Promise<void>;
}

/** Decided ids the journal's snapshot keeps, so duplicates of recent PREPAREs still get NO after a restart. */
const DECIDED_KEPT_MAX = 10_000;

export function isTxnRecord(v: unknown): v is TxnRecord {
  return isJournalRecord(v) && v.kind !== 'data';
}

/** The journal's fold for a database resource: prepared and recently decided transactions, no data. Pure. */
export class TxnJournalState implements JournalFold<TxnRecord> {
  readonly prepared = new Map<TxnId, PreparedRecord>();
  /** Decision order (Map insertion order); bounded. Invariant: disjoint from `prepared`. */
  readonly decided = new Map<TxnId, { outcome: Settled; atMs: number }>();
  private readonly oldestDecided = new OldestFirst(this.decided);

  add(r: TxnRecord): void {
    if (r.kind === 'prepared') {
      this.decided.delete(r.txnId);
      this.prepared.set(r.txnId, r);
      return;
    }
    this.prepared.delete(r.txnId);
    this.decided.delete(r.txnId);
    this.decided.set(r.txnId, { outcome: r.kind, atMs: r.atMs });
    this.oldestDecided.trimTo(DECIDED_KEPT_MAX);
  }

  snapshot(): TxnRecord[] {
    return this.txnRecords();
  }

  txnRecords(): TxnRecord[] {
    const out: TxnRecord[] = [];
    for (const [txnId, d] of this.decided) out.push({ kind: d.outcome, txnId, atMs: d.atMs });
    for (const p of this.prepared.values()) out.push(p);
    return out;
  }
}

export interface Reconciled {
  /** What engine.recover() gets: the journal's records, then a prepared record per adopted gid. */
  records: TxnRecord[];
  /** Prepared in the database but not in the journal; now in doubt in the engine. */
  adopted: { txnId: TxnId; gid: string }[];
  /** Prepared in the database under our prefix with a hashed name no journal record matches. */
  unknown: PreparedGid[];
  /** gid → txn id for every gid found, readable or matched through the journal. */
  txnIdOf: Map<string, TxnId>;
}

/** Merges the journal's records with this participant's prepared gids (see the table above). Pure. */
export function reconcile(
  journal: readonly TxnRecord[],
  dbPrepared: readonly PreparedGid[],
  gidOf: (txnId: TxnId) => string,
): Reconciled {
  const prepared = new Set<TxnId>();
  const byGid = new Map<string, TxnId>();
  for (const r of journal) {
    if (r.kind === 'prepared') prepared.add(r.txnId);
    else prepared.delete(r.txnId);
    byGid.set(gidOf(r.txnId), r.txnId);
  }
  const records = [...journal];
  const adopted: Reconciled['adopted'] = [];
  const unknown: PreparedGid[] = [];
  const txnIdOf = new Map<string, TxnId>();
  for (const p of dbPrepared) {
    const txnId = p.parsed.kind === 'readable' ? p.parsed.txnId : byGid.get(p.gid);
    if (txnId === undefined) {
      unknown.push(p);
      continue;
    }
    txnIdOf.set(p.gid, txnId);
    if (prepared.has(txnId)) continue;
    prepared.add(txnId);
    adopted.push({ txnId, gid: p.gid });
    // No payload or participant list: the database holds the prepared work, and the engine needs neither to resolve it.
    records.push({ kind: 'prepared', txnId, atMs: p.preparedAtMs, payloadB64: '', participants: [] });
  }
  return { records, adopted, unknown, txnIdOf };
}

// ---- The monitor ----

export interface PreparedMonitorOptions {
  resource: PreparedResource;
  engine: Pick<ParticipantEngine, 'stateOf' | 'resolveInDoubt'>;
  askOutcome: AskOutcome;
  log: EngineLog;
  /** txn ids of hashed gids known from the journal at start. */
  knownTxnIds?: ReadonlyMap<string, TxnId>;
  scanIntervalMs?: number;
  /** A prepared gid the engine does not hold is resolved by the monitor once this old. */
  orphanAfterMs?: number;
  markerCleanupIntervalMs?: number;
  /** Outcome questions one scan asks at most. */
  asksPerScanMax?: number;
}

export interface StuckAlert {
  txnId: TxnId | null;
  gid: string;
  ageMs: number;
  /** What the cluster says, or why there is no answer. */
  clusterAnswer: ClusterOutcome | string;
}

export interface ScanReport {
  prepared: number;
  stuck: StuckAlert[];
  orphansResolved: { txnId: TxnId; outcome: Outcome }[];
}

export class PreparedMonitor {
  private readonly o: Required<Omit<PreparedMonitorOptions, 'knownTxnIds'>> & {
    knownTxnIds: ReadonlyMap<string, TxnId>;
  };
  private scanTimer: NodeJS.Timeout | null = null;
  private cleanupTimer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** Unknown hashed gids already reported once (re-reported while stuck). */
  private readonly unknownReported = new Set<string>();

  constructor(o: PreparedMonitorOptions) {
    this.o = withDefaults(
      {
        scanIntervalMs: 30_000,
        orphanAfterMs: 60_000,
        markerCleanupIntervalMs: 3_600_000,
        asksPerScanMax: 100,
        knownTxnIds: new Map<string, TxnId>(),
      },
      o,
    );
  }

  /** Scans now and every scanIntervalMs; cleans markers now and every markerCleanupIntervalMs. */
  start(): void {
    const loop = (what: () => Promise<unknown>, everyMs: number, set: (t: NodeJS.Timeout) => void): void => {
      const tick = (): void => {
        if (this.stopped) return;
        this.running = this.running.then(what).catch((err: unknown) => {
          if (!this.stopped)
            this.o.log.warn(
              { err: this.o.resource.describeError(err) },
              `${this.o.resource.kind} recovery scan failed; trying again at the next interval`,
            );
        });
        void this.running.then(() => {
          if (!this.stopped) set(setTimeout(tick, everyMs).unref());
        });
      };
      tick();
    };
    loop(
      () => this.scan(),
      this.o.scanIntervalMs,
      (t) => (this.scanTimer = t),
    );
    loop(
      () => this.cleanup(),
      this.o.markerCleanupIntervalMs,
      (t) => (this.cleanupTimer = t),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer !== null) clearTimeout(this.scanTimer);
    if (this.cleanupTimer !== null) clearTimeout(this.cleanupTimer);
    await this.running.catch(() => {});
  }

  /** One pass over this participant's prepared gids: alerts, orphans, metrics values. */
  async scan(): Promise<ScanReport> {
    const { resource, engine, log } = this.o;
    const list = await resource.listPrepared();
    const report: ScanReport = { prepared: list.length, stuck: [], orphansResolved: [] };
    let asks = 0;
    let nudge = false;
    for (const p of list) {
      if (this.stopped) break;
      const txnId =
        p.parsed.kind === 'readable' ? p.parsed.txnId : (resource.txnIdOfGid(p.gid) ?? this.o.knownTxnIds.get(p.gid));
      const stuck = p.ageMs >= resource.stuckAfterMs;
      if (txnId === undefined) {
        if (!this.unknownReported.has(p.gid) || stuck) {
          this.unknownReported.add(p.gid);
          log.error(
            { gid: p.gid, ageMs: p.ageMs },
            `prepared transaction of this participant whose txn id is unknown (hashed gid, not in the journal): it cannot be asked about; resolve it by hand (${resource.byHand}) after checking the cluster`,
          );
        }
        if (stuck) report.stuck.push({ txnId: null, gid: p.gid, ageMs: p.ageMs, clusterAnswer: 'txn id unknown' });
        continue;
      }
      const state = engine.stateOf(txnId);
      const orphan = state !== 'prepared' && p.ageMs >= this.o.orphanAfterMs;
      if (!stuck && !orphan) continue;
      if (asks >= this.o.asksPerScanMax) {
        if (stuck)
          report.stuck.push({
            txnId,
            gid: p.gid,
            ageMs: p.ageMs,
            clusterAnswer: 'not asked (too many questions this scan)',
          });
        continue;
      }
      asks += 1;
      const answer = await this.ask(txnId);
      if (stuck) {
        report.stuck.push({ txnId, gid: p.gid, ageMs: p.ageMs, clusterAnswer: answer });
        log.warn(
          { txnId, gid: p.gid, ageMs: p.ageMs, clusterAnswer: answer, local: state ?? 'not held by the engine' },
          'prepared transaction older than the alert threshold',
        );
      }
      if (answer !== 'COMMITTED' && answer !== 'ABORTED') continue;
      if (state === 'prepared') {
        nudge = true; // the engine's own resolver applies it (and journals it)
        continue;
      }
      try {
        await (answer === 'COMMITTED' ? resource.commitAsync(txnId) : resource.abortAsync(txnId));
        report.orphansResolved.push({ txnId, outcome: answer });
        log.info(
          { txnId, gid: p.gid, outcome: answer },
          "prepared transaction the engine did not hold resolved with the cluster's answer",
        );
      } catch (err) {
        log.error(
          { txnId, gid: p.gid, outcome: answer, err: (err as Error).message },
          "could not apply the cluster's answer to a prepared transaction",
        );
      }
    }
    if (nudge) engine.resolveInDoubt();
    // Forget gids no longer prepared, so the set stays bounded by what one scan returns.
    const seen = new Set(list.map((p) => p.gid));
    for (const gid of this.unknownReported) if (!seen.has(gid)) this.unknownReported.delete(gid);
    return report;
  }

  async cleanup(): Promise<number> {
    const n = await this.o.resource.cleanupMarkers();
    if (n > 0) this.o.log.info({ markersDeleted: n }, 'old commit markers deleted');
    return n;
  }

  private ask(txnId: TxnId): Promise<ClusterOutcome | string> {
    return new Promise((resolve) => {
      let done = false;
      this.o.askOutcome(txnId, (err, outcome) => {
        if (done) return;
        done = true;
        resolve(err !== null ? `no answer: ${err.message}` : outcome);
      });
    });
  }
}

// ---- Wiring for the participant runtime ----

export interface PreparedParticipantOptions {
  scanIntervalMs?: number;
  orphanAfterMs?: number;
  markerCleanupIntervalMs?: number;
}

/** What the runtime passes every database participant besides the resource's own options. */
export interface DbParticipantContext {
  clusterId: string;
  participantId: string;
  dataDir: string;
  log: EngineLog;
  compactAfterRecords?: number;
}

/**
 * openPreparedParticipant for one kind of database: splits the runtime's
 * options into the resource's (with cluster, participant and log) and the
 * monitor's, and opens them.
 */
export function openDbParticipant<R extends PreparedResource, O extends object>(
  o: O & PreparedParticipantOptions & DbParticipantContext,
  kind: {
    journalFile: string;
    open: (resourceOptions: O & { clusterId: string; participantId: string; log: EngineLog }) => Promise<R>;
    refuse: (message: string) => Error;
  },
): Promise<PreparedSetup<R>> {
  const { dataDir, compactAfterRecords, scanIntervalMs, orphanAfterMs, markerCleanupIntervalMs, ...resourceOptions } =
    o;
  return openPreparedParticipant({
    openResource: () =>
      kind.open(resourceOptions as unknown as O & { clusterId: string; participantId: string; log: EngineLog }),
    journalFile: kind.journalFile,
    dataDir,
    log: o.log,
    compactAfterRecords,
    monitor: { scanIntervalMs, orphanAfterMs, markerCleanupIntervalMs },
    refuse: kind.refuse,
  });
}

export interface PreparedSetup<R extends PreparedResource = PreparedResource> {
  resource: R;
  journal: Journal & { close(): Promise<void>; stats(): JournalStats };
  /** For engine.recover(): the journal's records and the adopted gids. */
  records: TxnRecord[];
  /** Starts the monitor, once the engine has recovered and started. */
  start(engine: Pick<ParticipantEngine, 'stateOf' | 'resolveInDoubt'>, askOutcome: AskOutcome): PreparedMonitor;
  /** Stops the monitor and closes the resource (the journal is the caller's to close). */
  close(): Promise<void>;
}

/**
 * Opens the resource (which refuses with the reason when its database cannot
 * prepare safely), the journal `journalFile` in dataDir, and reconciles them
 * (see the table above). `refuse` makes the adapter's start-up refusal.
 */
export async function openPreparedParticipant<R extends PreparedResource>(o: {
  openResource: () => Promise<R>;
  journalFile: string;
  dataDir: string;
  log: EngineLog;
  compactAfterRecords?: number;
  monitor: PreparedParticipantOptions;
  refuse: (message: string) => Error;
}): Promise<PreparedSetup<R>> {
  if (await exists(join(o.dataDir, 'journal.log'))) {
    throw o.refuse(
      `data directory ${o.dataDir} holds a memory participant's journal (journal.log); give this participant a data directory of its own`,
    );
  }
  const resource = await o.openResource();
  let journal: FileJournal<TxnRecord>;
  const state = new TxnJournalState();
  try {
    journal = await FileJournal.open<TxnRecord>({
      path: join(o.dataDir, o.journalFile),
      fold: state,
      isRecord: isTxnRecord,
      compactAfterRecords: o.compactAfterRecords,
      deferred: isDecisionRecord,
      // A prepared record the database already holds durably under a readable gid has no one waiting
      // for it: it rides in the next frame, usually its DECISION's, instead of a sync of its own.
      lazy: (r) => r.kind === 'prepared' && resource.durableAtPrepare?.(r.txnId) === true,
      log: o.log,
    });
  } catch (err) {
    await resource.close();
    throw err;
  }
  let rec: Reconciled;
  try {
    rec = reconcile(state.txnRecords(), await resource.listPrepared(), (txnId) => resource.gid(txnId));
  } catch (err) {
    await journal.close();
    await resource.close();
    throw o.refuse(`cannot list the prepared transactions in ${resource.kind}: ${resource.describeError(err)}`);
  }
  for (const a of rec.adopted)
    o.log.warn(
      { txnId: a.txnId, gid: a.gid },
      `prepared in ${resource.kind} but not in the journal: in doubt, asking the cluster`,
    );
  for (const u of rec.unknown)
    o.log.error(
      { gid: u.gid, ageMs: u.ageMs },
      `prepared in ${resource.kind} with a hashed gid the journal does not know: left alone; resolve it by hand`,
    );
  let monitor: PreparedMonitor | null = null;
  return {
    resource,
    journal,
    records: rec.records,
    start(engine, askOutcome) {
      monitor = new PreparedMonitor({
        resource,
        engine,
        askOutcome,
        log: o.log,
        knownTxnIds: rec.txnIdOf,
        ...o.monitor,
      });
      monitor.start();
      return monitor;
    },
    async close() {
      await monitor?.stop();
      await resource.close();
    },
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
