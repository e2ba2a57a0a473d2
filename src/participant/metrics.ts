// A participant's Prometheus metrics, read from the engine's counts() and
// inDoubt() at scrape time. The one to alert on is the age of the oldest
// prepared transaction: a participant holds its locks until the cluster
// decides (R4), so a large age means a transaction stuck in doubt.

import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { ParticipantEngine } from './engine.ts';
import type { PreparedStats } from './prepared-recovery.ts';
import type { TccCounts } from './tcc/barrier.ts';

/**
 * `refusedCalls`: PREPAREs, DECISIONs and Exchange streams refused because the caller is not a node of the cluster
 * (TLS). dbPrepared: for a database resource, what its last scan of the database's own prepared list
 * (pg_prepared_xacts, XA RECOVER) found, which includes branches the engine does not hold (adopted, orphaned, another
 * process's).
 */
export function participantMetrics(
  participantId: string,
  engine: ParticipantEngine,
  nowMs: () => number = Date.now,
  refusedCalls: () => number = () => 0,
  dbPrepared?: () => PreparedStats,
  tcc?: () => TccCounts & { expired: number },
): Registry {
  const r = new Registry();
  r.setDefaultLabels({ participant: participantId });
  collectDefaultMetrics({ register: r, prefix: 'verdict_participant_' });
  new Gauge({
    name: 'verdict_participant_prepared',
    help: 'Transactions durably prepared here and waiting for the DECISION.',
    registers: [r],
    collect() {
      this.set(engine.counts().prepared);
    },
  });
  new Gauge({
    name: 'verdict_participant_preparing',
    help: "PREPAREs between the resource's yes and the journal's sync.",
    registers: [r],
    collect() {
      this.set(engine.counts().preparing);
    },
  });
  new Gauge({
    name: 'verdict_participant_oldest_prepared_age_seconds',
    help: 'Age of the oldest prepared transaction (0 when none): how long its locks have been held.',
    registers: [r],
    collect() {
      let oldest = Infinity;
      for (const t of engine.inDoubt()) oldest = Math.min(oldest, t.preparedAtMs);
      this.set(oldest === Infinity ? 0 : Math.max(0, (nowMs() - oldest) / 1_000));
    },
  });
  new Gauge({
    name: 'verdict_participant_resolving',
    help: 'Prepared transactions whose outcome is being asked of the cluster (in doubt).',
    registers: [r],
    collect() {
      this.set(engine.counts().resolving);
    },
  });
  new Counter({
    name: 'verdict_participant_votes_total',
    help: 'VOTEs given, by vote.',
    labelNames: ['vote'],
    registers: [r],
    collect() {
      const c = engine.counts();
      this.reset();
      this.inc({ vote: 'yes' }, c.votesYes);
      this.inc({ vote: 'no' }, c.votesNo);
    },
  });
  new Counter({
    name: 'verdict_participant_decisions_total',
    help: 'Decisions applied to prepared transactions, by outcome.',
    labelNames: ['outcome'],
    registers: [r],
    collect() {
      const c = engine.counts();
      this.reset();
      this.inc({ outcome: 'committed' }, c.committed);
      this.inc({ outcome: 'aborted' }, c.aborted);
    },
  });
  new Counter({
    name: 'verdict_participant_refused_calls_total',
    help: 'PREPAREs, DECISIONs and Exchange streams refused PERMISSION_DENIED: the caller is not a node of this cluster.',
    registers: [r],
    collect() {
      this.reset();
      this.inc(refusedCalls());
    },
  });
  if (dbPrepared !== undefined) {
    new Gauge({
      name: 'verdict_participant_db_prepared',
      help: 'Prepared transactions of this participant in its database, as of the last recovery scan.',
      registers: [r],
      collect() {
        this.set(dbPrepared().count);
      },
    });
    new Gauge({
      name: 'verdict_participant_db_oldest_prepared_age_seconds',
      help: 'Age of the oldest prepared transaction of this participant in its database (0 when none), as of the last recovery scan.',
      registers: [r],
      collect() {
        this.set(dbPrepared().oldestAgeMs / 1_000);
      },
    });
    new Gauge({
      name: 'verdict_participant_db_stuck_prepared',
      help: 'Prepared transactions in the database older than the alert threshold (stuckAfterMs).',
      registers: [r],
      collect() {
        this.set(dbPrepared().stuck);
      },
    });
  }
  if (tcc !== undefined) tccMetrics(r, tcc);
  return r;
}

/** A TCC participant's reserves: held now, expired, empty rollbacks, refused hanging Trys, handler failures. */
function tccMetrics(r: Registry, tcc: () => TccCounts & { expired: number }): void {
  new Gauge({
    name: 'verdict_participant_tcc_reserves_held',
    help: 'TCC reserves held now: tried, neither confirmed nor cancelled.',
    registers: [r],
    collect() {
      this.set(tcc().held);
    },
  });
  const counters: [keyof TccCounts | 'expired', string, string][] = [
    [
      'expired',
      'verdict_participant_tcc_reserves_expired_total',
      'TCC reserves whose TTL ran out before a decision reached this participant (each then asked the cluster).',
    ],
    [
      'emptyRollbacks',
      'verdict_participant_tcc_empty_rollbacks_total',
      'Cancels that found no Try on record (empty rollbacks), recorded so that a late Try is refused.',
    ],
    [
      'hangingRefused',
      'verdict_participant_tcc_hanging_tries_refused_total',
      'Trys refused because their Cancel came first (hanging Trys); each voted NO.',
    ],
    [
      'handlerFailures',
      'verdict_participant_tcc_handler_failures_total',
      'TCC handler calls that threw: a Try votes NO, a Confirm or Cancel is retried.',
    ],
  ];
  for (const [key, name, help] of counters) {
    new Counter({
      name,
      help,
      registers: [r],
      collect() {
        this.reset();
        this.inc(tcc()[key]);
      },
    });
  }
}
