// A node's Prometheus metrics. Raft's numbers are read from the core's status
// and the commit engine's from its read-only counters at scrape time; only
// what happens between two scrapes (a persist's latency, a Commit RPC's
// latency) is observed as it happens. Every name starts with `verdict_`.
//
// With decision groups (docs/operations.md, "Decision groups") the commit
// engine's and the decision table's figures are summed over every group the
// node hosts (at G = 1: group 0's, as ever), Raft's are group 0's, and the
// verdict_group_* metrics give the per-group figures with a `group` label.

import { statfsSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ABORT_CLASSES, type CoordinatorEngine } from '../commit/engine.ts';
import { HEURISTIC_KINDS, type DecisionTable, type HeuristicKind } from '../commit/state.ts';
import { Role } from '../raft/types.ts';
import type { PersistBatch } from '../storage/types.ts';
import type { GroupStorageStats } from '../storage/group-store.ts';
import type { ExchangeCounts } from '../transport/participant-exchange.ts';
import { packageVersion } from '../util/version.ts';
import type { Driver } from './driver.ts';
import type { Access } from '../transport/auth.ts';
import { REFUSAL_CLASSES, type Refusals } from './limits.ts';

const ROLES = [Role.Leader, Role.Follower, Role.Candidate, Role.PreCandidate] as const;

/** How a Commit RPC was answered; a closed set, for the latency histogram's label. */
export type CommitAnswer = 'committed' | 'aborted' | 'in_progress' | 'unknown' | 'error';

/** What a PREPARE brought back: a vote, or none (no answer, an error, the deadline). */
export type PrepareVote = 'yes' | 'no' | 'none';

export class NodeMetrics {
  readonly registry = new Registry();
  private readonly persistSeconds: Histogram<'sync'>;
  private readonly appendEntries: Histogram;
  private readonly commitSeconds: Histogram<'outcome'>;
  private readonly prepareSeconds: Histogram<'participant' | 'vote'>;
  private readonly votes: Counter<'participant' | 'vote'>;

  /** The sources are read at scrape time; before the log is recovered they are null and their metrics are absent. */
  constructor(src: {
    nodeId: string;
    driver: () => Driver<unknown> | null;
    engine: () => CoordinatorEngine | null;
    table: () => DecisionTable | null;
    /** Refused inbound Raft batches and messages, by reason (src/transport/refusal-log.ts). */
    refusals?: () => ReadonlyMap<string, number>;
    /** Raft messages handed to the peers' streams, every group together (src/transport/grpc.ts). */
    raftSent?: () => { messages: number; batches: number; bytes: number };
    /** PREPAREs and DECISIONs sent, votes and acks received (src/transport/participant-exchange.ts). */
    participantExchange?: () => ExchangeCounts | null;
    /** The shared storage writer's batches and syncs; null at one group (src/storage/group-store.ts). */
    storage?: () => GroupStorageStats | null;
    /** Refused client-facing requests, by class (./limits.ts). */
    requestRefusals?: () => Refusals | null;
    /** Calls refused PERMISSION_DENIED, by role. */
    access?: Access;
    /** Leaders this node has seen take office since it started (src/console/timeline.ts). */
    leadersSeen?: () => number;
    /** Calls a participant answered UNIMPLEMENTED, by participant and method (./protocol-gaps.ts). */
    unimplemented?: () => readonly { participantId: string; method: string; count: number }[];
    /** The data directory, whose file system's free and total bytes are read at scrape time. */
    dataDir?: string;
    /**
     * When this node's TLS certificate (read at start) stops being valid, in ms since the epoch; absent without TLS.
     */
    certificateNotAfterAtMs?: number;
    /**
     * Every decision group's replica on this node, group 0's first: the engine's and the table's figures are summed
     * over them and the verdict_group_* metrics read each. Absent: one group, `driver`, `engine` and `table`.
     */
    groups?: () => readonly MetricsGroup[];
  }) {
    const r = this.registry;
    r.setDefaultLabels({ node: src.nodeId });
    // The process's runtime metrics under their stock names (process_cpu_seconds_total,
    // nodejs_heap_size_used_bytes, ...), so Node.js dashboards and process_* alerts match them.
    // prom-client's three gauges named *_total (a count now, not a counter) are dropped: the
    // same counts are in nodejs_active_handles, _requests and _resources, by type.
    collectDefaultMetrics({ register: r });
    for (const gaugeNamedTotal of [
      'nodejs_active_handles_total',
      'nodejs_active_requests_total',
      'nodejs_active_resources_total',
    ])
      r.removeSingleMetric(gaugeNamedTotal);
    new Gauge({
      name: 'verdict_build_info',
      help: 'Always 1; its labels name the Verdict version and the Node.js version this node runs.',
      labelNames: ['version', 'nodejs_version'],
      registers: [r],
    }).set({ version: packageVersion(), nodejs_version: process.version }, 1);
    type Status = ReturnType<Driver<unknown>['node']['status']>;
    /** Sets `g` from the Raft status, when there is one. */
    const fromStatus = (g: Gauge, f: (s: Status) => number): void => {
      const d = src.driver();
      if (d) g.set(f(d.node.status()));
    };

    new Counter({
      name: 'verdict_permission_denied_total',
      help: 'Calls refused PERMISSION_DENIED, by the role the caller lacked (admin, participant, starter: the client that started a saga).',
      labelNames: ['role'],
      registers: [r],
      collect() {
        this.reset();
        this.inc({ role: 'admin' }, src.access?.denials.admin ?? 0);
        this.inc({ role: 'participant' }, src.access?.denials.participant ?? 0);
        this.inc({ role: 'starter' }, src.access?.denials.starter ?? 0);
      },
    });
    new Gauge({
      name: 'verdict_raft_term',
      help: 'Current Raft term.',
      registers: [r],
      collect() {
        fromStatus(this, (s) => s.hardState.term);
      },
    });
    new Gauge({
      name: 'verdict_raft_role',
      help: 'Raft role of this node: 1 for the current role, 0 for the others.',
      labelNames: ['role'],
      registers: [r],
      collect() {
        const role = src.driver()?.node.status().softState.role;
        if (role !== undefined) for (const x of ROLES) this.set({ role: x }, x === role ? 1 : 0);
      },
    });
    new Gauge({
      name: 'verdict_has_leader',
      help: 'Whether this node knows a current leader: 1 if so, 0 while there is none (an election, or no majority).',
      registers: [r],
      collect() {
        const d = src.driver();
        if (d) this.set(d.node.status().softState.leader === '' ? 0 : 1);
      },
    });
    new Counter({
      name: 'verdict_leader_changes_seen_total',
      help: 'Leaders this node has seen take office (a new leader, or the same one in a new term) since it started.',
      registers: [r],
      collect() {
        mirror(this, src.leadersSeen?.() ?? 0);
      },
    });
    const dataDir = src.dataDir;
    if (dataDir !== undefined) {
      /** The data directory's file system, or null when it cannot be read (the gauges are then absent). */
      const fsOf = (): { free: number; total: number } | null => {
        try {
          const st = statfsSync(dataDir);
          return { free: st.bavail * st.bsize, total: st.blocks * st.bsize };
        } catch {
          return null;
        }
      };
      new Gauge({
        name: 'verdict_data_dir_filesystem_avail_bytes',
        help: "Bytes free for this node on the data directory's file system (available to unprivileged users).",
        registers: [r],
        collect() {
          const f = fsOf();
          if (f) this.set(f.free);
        },
      });
      new Gauge({
        name: 'verdict_data_dir_filesystem_size_bytes',
        help: "Total size of the data directory's file system, in bytes.",
        registers: [r],
        collect() {
          const f = fsOf();
          if (f) this.set(f.total);
        },
      });
    }
    if (src.certificateNotAfterAtMs !== undefined) {
      new Gauge({
        name: 'verdict_tls_certificate_expiry_timestamp_seconds',
        help: "When this node's TLS certificate, as loaded at start, stops being valid (Unix time, seconds).",
        registers: [r],
      }).set(Math.floor(src.certificateNotAfterAtMs / 1000));
    }
    new Gauge({
      name: 'verdict_raft_commit_index',
      help: 'Highest log index known to be committed.',
      registers: [r],
      collect() {
        fromStatus(this, (s) => s.hardState.commit);
      },
    });
    new Gauge({
      name: 'verdict_raft_applied_index',
      help: 'Highest log index applied to the decision table.',
      registers: [r],
      collect() {
        fromStatus(this, (s) => s.applied);
      },
    });
    new Gauge({
      name: 'verdict_raft_last_index',
      help: 'Index of the last entry in the local log.',
      registers: [r],
      collect() {
        fromStatus(this, (s) => s.lastIndex);
      },
    });

    new Counter({
      name: 'verdict_raft_messages_refused_total',
      help: 'Inbound Raft batches and messages refused at the edge, by reason (see docs/hardening-raft.md); each is dropped and logged.',
      labelNames: ['reason'],
      registers: [r],
      collect() {
        const totals = src.refusals?.();
        if (!totals) return;
        this.reset();
        for (const [reason, n] of totals) this.inc({ reason }, n);
      },
    });

    this.countsMetrics(src);

    this.persistSeconds = new Histogram({
      name: 'verdict_raft_persist_duration_seconds',
      help: 'Time from LogStore.persist to its callback: the entries appended to the segment file and synced, then the hard state and high-water mark in one LevelDB write (docs/storage.md); sync="true" when the batch had to be synced.',
      labelNames: ['sync'],
      buckets: [0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [r],
    });
    this.appendEntries = new Histogram({
      name: 'verdict_raft_append_batch_entries',
      help: 'Log entries written per persisted Ready (group commit batch size).',
      buckets: [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers: [r],
    });

    // The figures of every group, summed: at one group, exactly the one engine's and table's.
    const groups = (): readonly MetricsGroup[] => {
      const gs = src.groups?.();
      if (gs !== undefined && gs.length > 0) return gs;
      const engine = src.engine();
      const table = src.table();
      const driver = src.driver();
      return engine === null || table === null || driver === null ? [] : [{ engine, table, driver }];
    };
    const sum = (f: (g: MetricsGroup) => number): number => groups().reduce((n, g) => n + f(g), 0);
    const eng = (): { counters(): EngineCounters; phases(): EnginePhases } | null =>
      groups().length === 0 ? null : summedEngine(groups());
    new Counter({
      name: 'verdict_transactions_begun_total',
      help: 'Transactions begun on this node while it led.',
      registers: [r],
      collect() {
        mirror(this, eng()?.counters().begun ?? 0);
      },
    });
    new Counter({
      name: 'verdict_transactions_committed_total',
      help: 'COMMIT decisions applied while this node led.',
      registers: [r],
      collect() {
        mirror(this, eng()?.counters().committed ?? 0);
      },
    });
    new Counter({
      name: 'verdict_transactions_aborted_total',
      help: 'Transactions aborted while this node led, by reason class.',
      labelNames: ['reason'],
      registers: [r],
      collect() {
        const aborted = eng()?.counters().aborted;
        this.reset();
        for (const c of ABORT_CLASSES) this.inc({ reason: c }, aborted?.[c] ?? 0);
      },
    });
    this.commitSeconds = new Histogram({
      name: 'verdict_commit_duration_seconds',
      help: 'Commit RPC latency on this node, from receipt to answer, by answer.',
      labelNames: ['outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [r],
    });
    // The participant label is bounded by the registry (participantsMax); a removed participant's series stay until
    // restart.
    this.prepareSeconds = new Histogram({
      name: 'verdict_prepare_duration_seconds',
      help: 'PREPARE round trips this leader made, from sending to the vote (or to giving up), by participant and vote (yes, no, none).',
      labelNames: ['participant', 'vote'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [r],
    });
    this.votes = new Counter({
      name: 'verdict_participant_votes_total',
      help: 'Votes this leader received for PREPAREs it sent, by participant and vote (none: no answer, an error or the deadline).',
      labelNames: ['participant', 'vote'],
      registers: [r],
    });
    new Gauge({
      name: 'verdict_transactions_in_flight',
      help: 'Transactions this leader has begun and not decided yet.',
      registers: [r],
      collect() {
        const p = eng()?.phases();
        this.set(p ? p.begun + p.preparing + p.deciding : 0);
      },
    });
    new Gauge({
      name: 'verdict_decisions_unacked',
      help: 'Decided transactions whose DECISION some participant has not acknowledged yet (leader only).',
      registers: [r],
      collect() {
        this.set(eng()?.phases().delivering ?? 0);
      },
    });
    new Gauge({
      name: 'verdict_decisions_unforgotten',
      help: 'Decisions in the replicated table not yet forgotten (COMMITs wait for every ACK, R5).',
      registers: [r],
      collect() {
        this.set(sum((g) => g.table.decisions.size));
      },
    });
    new Gauge({
      name: 'verdict_participants_registered',
      help: 'Participants in the replicated registry.',
      registers: [r],
      collect() {
        this.set(src.table()?.participants.size ?? 0);
      },
    });
    new Counter({
      name: 'verdict_heuristic_outcomes_total',
      help: 'Heuristic outcomes reported by participants and recorded in the decision table, by kind (HEURCOM, HEURRB: consistent with the decision; HEURMIX: contrary to it; HEURHAZ: no decision to compare with).',
      labelNames: ['kind'],
      registers: [r],
      collect() {
        // The table is replicated, so every node reports the same counts; kept records are bounded (INCIDENTS_MAX).
        const n: Record<HeuristicKind, number> = { HEURCOM: 0, HEURRB: 0, HEURMIX: 0, HEURHAZ: 0 };
        for (const g of groups()) for (const list of g.table.heuristics.values()) for (const h of list) n[h.kind]++;
        this.reset();
        for (const k of HEURISTIC_KINDS) this.inc({ kind: k }, n[k]);
      },
    });
    new Counter({
      name: 'verdict_requests_refused_total',
      help: 'Client requests refused at the edge, by class: too_large, undecodable, invalid_field, client_limit, stream_backlog (docs/limits.md).',
      labelNames: ['reason'],
      registers: [r],
      collect() {
        const counts = src.requestRefusals?.()?.counts;
        this.reset();
        for (const c of REFUSAL_CLASSES) this.inc({ reason: c }, counts?.get(c) ?? 0);
      },
    });
    new Counter({
      name: 'verdict_participant_unimplemented_total',
      help: 'Calls to a participant answered UNIMPLEMENTED, by participant and method (Status: parallel commit recovery waits; Decide: the decision is retried; Prepare: the transaction aborts). The participant label is bounded by the registry.',
      labelNames: ['participant', 'method'],
      registers: [r],
      collect() {
        this.reset();
        for (const g of src.unimplemented?.() ?? [])
          this.inc({ participant: g.participantId, method: g.method }, g.count);
      },
    });
    new Counter({
      name: 'verdict_decision_delivery_retries_total',
      help: 'DECISION deliveries that failed and were rescheduled with backoff.',
      registers: [r],
      collect() {
        mirror(this, eng()?.counters().decisionRetries ?? 0);
      },
    });
    groupMetrics(r, groups);
  }

  /**
   * Counts of what the node sent and synced, read at scrape time: the cost of a transaction in messages and syncs
   * (the decision groups benchmark, docs/benchmarks.md).
   */
  private countsMetrics(src: {
    raftSent?: () => { messages: number; batches: number; bytes: number };
    participantExchange?: () => ExchangeCounts | null;
    storage?: () => GroupStorageStats | null;
  }): void {
    const r = this.registry;
    const { raftSent, participantExchange, storage } = src;
    if (raftSent !== undefined) {
      const counter = (
        name: string,
        help: string,
        read: (s: { messages: number; batches: number; bytes: number }) => number,
      ): void => {
        new Counter({
          name,
          help,
          registers: [r],
          collect() {
            this.reset();
            this.inc(read(raftSent()));
          },
        });
      };
      counter(
        'verdict_raft_messages_sent_total',
        'Raft messages this node handed to its peers, every decision group together.',
        (s) => s.messages,
      );
      counter(
        'verdict_raft_message_batches_sent_total',
        'Batches those Raft messages went in: one write on a peer stream each (with several groups, a node heartbeat of no message is one too).',
        (s) => s.batches,
      );
      counter(
        'verdict_raft_message_bytes_sent_total',
        "Size of those Raft messages as the peer queue's bound counts it (an estimate of the encoded bytes).",
        (s) => s.bytes,
      );
    }
    if (participantExchange !== undefined)
      new Counter({
        name: 'verdict_participant_messages_total',
        help: 'PREPARE and DECISION requests this node sent to participants (kind="request") and the votes and acks back (kind="answer"), and the gRPC messages they went in (unit="message"; a stream batch or a unary call) or each alone (unit="request").',
        labelNames: ['kind', 'unit'],
        registers: [r],
        collect() {
          const c = participantExchange();
          if (c === null) return;
          this.reset();
          this.inc({ kind: 'request', unit: 'request' }, c.requests);
          this.inc({ kind: 'request', unit: 'message' }, c.requestMessages);
          this.inc({ kind: 'answer', unit: 'request' }, c.answers);
          this.inc({ kind: 'answer', unit: 'message' }, c.answerMessages);
        },
      });
    if (storage !== undefined)
      new Counter({
        name: 'verdict_storage_writes_total',
        help: 'The shared storage writer of more than one decision group: its batches (what="batch"), the groups\' batches they carried (what="group_batch"), the segment log\'s fdatasyncs (what="segment_sync") and LevelDB\'s synced writes (what="state_sync"). Absent at one group, where verdict_raft_persist_duration_seconds_count{sync="true"} counts the same batches.',
        labelNames: ['what'],
        registers: [r],
        collect() {
          const st = storage();
          if (st === null) return;
          this.reset();
          this.inc({ what: 'batch' }, st.batches);
          this.inc({ what: 'group_batch' }, st.groupBatches);
          this.inc({ what: 'segment_sync' }, st.segmentSyncs);
          this.inc({ what: 'state_sync' }, st.levelSyncs);
        },
      });
  }

  /** One persisted batch: its latency, and (for a Ready, not a local snapshot) its entry count. */
  observePersist(seconds: number, batch: PersistBatch): void {
    this.persistSeconds.observe({ sync: batch.sync ? 'true' : 'false' }, seconds);
    if (batch.localSnapshot === null) this.appendEntries.observe(batch.entries.length);
  }

  observeCommit(seconds: number, answer: CommitAnswer): void {
    this.commitSeconds.observe({ outcome: answer }, seconds);
  }

  /** One PREPARE this leader sent to `participantId`: its round trip and what came back. */
  observePrepare(participantId: string, seconds: number, vote: PrepareVote): void {
    this.prepareSeconds.observe({ participant: participantId, vote }, seconds);
    this.votes.inc({ participant: participantId, vote });
  }
}

/** A counter that mirrors a monotonic count kept elsewhere. */
function mirror(c: Counter, value: number): void {
  c.reset();
  c.inc(value);
}

/** What the metrics read of one decision group's replica. */
export interface MetricsGroup {
  engine: CoordinatorEngine;
  table: DecisionTable;
  driver: Driver<unknown>;
}

type EngineCounters = ReturnType<CoordinatorEngine['counters']>;
type EnginePhases = ReturnType<CoordinatorEngine['phases']>;

/** The counters and phases of every group's engine, summed (one group: its own). */
function summedEngine(gs: readonly MetricsGroup[]): { counters(): EngineCounters; phases(): EnginePhases } {
  if (gs.length === 1) return gs[0].engine;
  const add = <T extends object>(all: readonly T[]): T => {
    const out = structuredClone(all[0]) as Record<string, unknown>;
    for (const x of all.slice(1))
      for (const [k, v] of Object.entries(x)) {
        if (typeof v === 'number') out[k] = (out[k] as number) + v;
        else if (v !== null && typeof v === 'object') out[k] = add([out[k] as object, v as object]);
      }
    return out as T;
  };
  return {
    counters: () => add(gs.map((g) => g.engine.counters())),
    phases: () => add(gs.map((g) => g.engine.phases())),
  };
}

/**
 * The per-group figures, with a `group` label: whether this node leads the group, its transactions in flight and
 * decisions unacknowledged (known to the leader), its COMMITs applied while this node led it, and its applied index.
 */
function groupMetrics(r: Registry, groups: () => readonly MetricsGroup[]): void {
  const each = (f: (g: MetricsGroup) => number) =>
    function collect(this: Gauge<'group'> | Counter<'group'>): void {
      this.reset();
      groups().forEach((g, group) => {
        const v = f(g);
        if (this instanceof Gauge) this.set({ group: String(group) }, v);
        else this.inc({ group: String(group) }, v);
      });
    };
  new Gauge({
    name: 'verdict_group_leader',
    help: 'Whether this node leads the decision group (1) or not (0), by group.',
    labelNames: ['group'],
    registers: [r],
    collect: each((g) => (g.driver.isLeader() ? 1 : 0)),
  });
  new Gauge({
    name: 'verdict_group_transactions_in_flight',
    help: 'Transactions this node, as the group leader, has begun and not decided yet, by group.',
    labelNames: ['group'],
    registers: [r],
    collect: each((g) => {
      const p = g.engine.phases();
      return p.begun + p.preparing + p.deciding;
    }),
  });
  new Gauge({
    name: 'verdict_group_decisions_unacked',
    help: 'Decided transactions whose DECISION some participant has not acknowledged yet (group leader only), by group.',
    labelNames: ['group'],
    registers: [r],
    collect: each((g) => g.engine.phases().delivering),
  });
  new Counter({
    name: 'verdict_group_transactions_committed_total',
    help: 'COMMIT decisions applied while this node led the group, by group.',
    labelNames: ['group'],
    registers: [r],
    collect: each((g) => g.engine.counters().committed),
  });
  new Gauge({
    name: 'verdict_group_raft_applied_index',
    help: "The highest log index this node applied, in the group's own log, by group.",
    labelNames: ['group'],
    registers: [r],
    collect: each((g) => g.driver.node.status().applied),
  });
  new Gauge({
    name: 'verdict_group_quiesced',
    help: 'Whether the decision group is quiesced here (1: idle, no heartbeats; 0: not), by group; never at one group.',
    labelNames: ['group'],
    registers: [r],
    collect: each((g) => (g.driver.node.quiesced() ? 1 : 0)),
  });
}
