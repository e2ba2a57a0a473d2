// What the web console shows of a transaction's life and of the cluster's
// leaders: kept in this node's memory only, never in the replicated state.
//
// Each node records what it sees itself: the leader sees begin, every
// PREPARE and VOTE, the decision it proposed, every DECISION it sent and
// every ACK; every node sees the decision applied (with its log index) and
// the Forget. A node that became leader later knows only the applied part of
// older transactions. Both records are bounded rings: the oldest transaction
// (or leader change) makes room for the newest, so memory does not grow with
// traffic. Pure: the caller passes the time.

import { OldestFirst } from '../util/oldest-first.ts';

export type TimelineKind =
  | 'begin'
  | 'prepare'
  | 'vote'
  | 'proposed'
  | 'decided'
  | 'decision-sent'
  | 'ack'
  | 'no-ack'
  | 'forget'
  | 'status';

export interface TimelineEvent {
  atMs: number;
  kind: TimelineKind;
  /** The participant the event concerns (PREPARE, VOTE, DECISION, ACK); '' otherwise. */
  participantId: string;
  /** A vote's value and reason, an outcome, an error: short text. */
  detail: string;
  /** The log index of an applied decision; 0 otherwise. */
  index: number;
  /**
   * How many times it happened: a retry of the same event to the same participant is counted here, not kept as a row.
   */
  count: number;
  /** When it last happened (= atMs for one); its detail is the last one's (the last error). */
  lastAtMs: number;
}

/**
 * Events a retry repeats: a DECISION resent to a participant that has not
 * acknowledged, its failures, a status question repeated. They collapse into
 * one row per kind and participant with a count, so an hour of retries is two
 * rows, not hundreds.
 */
const REPEATED: ReadonlySet<TimelineKind> = new Set(['decision-sent', 'no-ack', 'status']);

/** Transactions whose timelines are kept (the most recently begun or touched). */
export const TIMELINE_TXNS_MAX = 2_000;
/**
 * Events kept per transaction; later ones are counted, not kept (a participant down for an hour retries its DECISION
 * many times).
 */
export const TIMELINE_EVENTS_MAX = 64;
const DETAIL_CHARS_MAX = 200;

export class TxnTimeline {
  private readonly txns = new Map<
    string,
    { events: TimelineEvent[]; dropped: number; repeats: Map<string, TimelineEvent> | null }
  >();
  private readonly oldest = new OldestFirst(this.txns);

  constructor(
    private readonly txnsMax = TIMELINE_TXNS_MAX,
    private readonly eventsMax = TIMELINE_EVENTS_MAX,
  ) {}

  record(
    txnId: string,
    e: Pick<TimelineEvent, 'atMs' | 'kind'> & Partial<Omit<TimelineEvent, 'count' | 'lastAtMs'>>,
  ): void {
    let t = this.txns.get(txnId);
    if (t === undefined) {
      // The ring: the transaction recorded first leaves first.
      this.oldest.trimTo(this.txnsMax - 1);
      // The map of repeated rows is made when the first one comes (most transactions have none: a leader records
      // about ten events per transaction, on the commit path).
      t = { events: [], dropped: 0, repeats: null };
      this.txns.set(txnId, t);
    }
    const participantId = e.participantId ?? '';
    const raw = e.detail ?? '';
    const detail = raw.length > DETAIL_CHARS_MAX ? raw.slice(0, DETAIL_CHARS_MAX) : raw;
    const repeated = REPEATED.has(e.kind);
    const key = repeated ? `${e.kind}\u0000${participantId}` : '';
    const seen = repeated ? t.repeats?.get(key) : undefined;
    if (seen !== undefined) {
      seen.count++;
      seen.lastAtMs = e.atMs;
      if (detail !== '') seen.detail = detail;
      return;
    }
    if (t.events.length >= this.eventsMax) {
      t.dropped++;
      return;
    }
    const event: TimelineEvent = {
      atMs: e.atMs,
      kind: e.kind,
      participantId,
      detail,
      index: e.index ?? 0,
      count: 1,
      lastAtMs: e.atMs,
    };
    t.events.push(event);
    if (repeated) (t.repeats ??= new Map()).set(key, event);
    // An ACK ends that participant's retries: a later DECISION (after a leader change) starts a new row.
    if (e.kind === 'ack' && t.repeats !== null)
      for (const k of REPEATED) t.repeats.delete(`${k}\u0000${participantId}`);
  }

  /** The events of `txnId` in the order they happened here, and how many were not kept; null when none is kept. */
  get(txnId: string): { events: TimelineEvent[]; dropped: number } | null {
    const t = this.txns.get(txnId);
    return t === undefined ? null : { events: t.events.map((e) => ({ ...e })), dropped: t.dropped };
  }

  has(txnId: string): boolean {
    return this.txns.has(txnId);
  }

  get size(): number {
    return this.txns.size;
  }
}

export interface LeaderChange {
  atMs: number;
  term: number;
  /** '' when no leader is known (an election is running). */
  leaderId: string;
}

export const LEADER_CHANGES_MAX = 100;

/** The leaders this node has seen, newest last; a ring of LEADER_CHANGES_MAX. */
export class LeaderHistory {
  private readonly changes: LeaderChange[] = [];
  private leadersSeen = 0;

  constructor(private readonly max = LEADER_CHANGES_MAX) {}

  /**
   * Leaders this node has seen take office (a new leader or a new term with one) since it started; unbounded, unlike
   * the list.
   */
  get leadersSeenTotal(): number {
    return this.leadersSeen;
  }

  /** Notes the leader this node now sees; a repeat of the last one is not a change. */
  note(atMs: number, term: number, leaderId: string): void {
    const last = this.changes.at(-1);
    if (last !== undefined && last.term === term && last.leaderId === leaderId) return;
    if (this.changes.length >= this.max) this.changes.shift();
    this.changes.push({ atMs, term, leaderId });
    if (leaderId !== '') this.leadersSeen++;
  }

  list(): LeaderChange[] {
    return [...this.changes];
  }
}
