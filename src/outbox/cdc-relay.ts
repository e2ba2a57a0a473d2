// The CDC relay: reads committed outbox inserts from a PostgreSQL logical
// replication slot (the test_decoding plugin), in commit order, and confirms
// the slot's position only after the broker confirmed every event up to it.
// Confirmed rows get `published_at` too, so the table can be pruned the same
// way under either relay.
//
// It peeks (pg_logical_slot_peek_changes, which moves nothing), publishes,
// and then advances the slot (pg_replication_slot_advance) to the end of the
// last transaction whose events were all confirmed. A crash anywhere before
// the advance republishes from the old position with the same message ids.
// Peeking and advancing by SQL, rather than streaming over a replication
// connection, keeps "confirmed only after the broker confirmed" in one place
// that is easy to read; it costs a round trip per batch.
//
// A slot nobody reads keeps WAL until the disk is full (one such slot kept
// 412 GB until PostgreSQL stopped with "No space left on device"). The relay
// refuses a server with max_slot_wal_keep_size = -1 (unbounded) unless told
// otherwise, and reports every slot's retained WAL (slots()). A slot that fell
// further behind than max_slot_wal_keep_size is lost (wal_status = lost):
// PostgreSQL removed WAL it needed, so the events in it can never be decoded.
// The relay refuses such a slot at start and stops when its slot is lost
// (CdcSlotLost); see docs/outbox.md for the way back.
//
// Standbys: only the relay that holds the CDC lease reads the slot. A relay
// starting while another reads it checks only what does not change under it
// (the server; the slot's plugin and state, creating it when missing, which
// two relays starting at once may both try), then waits for the lease.
import { explainMissingTable, type Queryable } from './schema.ts';
import {
  markPublished,
  PUBACKS_MAX,
  publishInOrder,
  type Fence,
  type PendingEvent,
  type RoundReport,
} from './polling-relay.ts';
import type { Sink } from './sink.ts';

export class CdcRefusal extends Error {
  override name = 'CdcRefusal';
}

/** The slot is lost (wal_status = lost): its events can never be decoded; the relay stops. */
export class CdcSlotLost extends CdcRefusal {
  override name = 'CdcSlotLost';
}

/** The one line a lost slot gets, at start or when it is found lost. */
export function lostSlotMessage(slot: string): string {
  return (
    `replication slot ${slot} is lost (wal_status = lost): it fell further behind than max_slot_wal_keep_size and PostgreSQL removed WAL it needed, ` +
    `so events written since cannot be read from it. Drop it (SELECT pg_drop_replication_slot('${slot}')), publish the rows still unpublished with the polling relay ` +
    `(--mode polling), then start the CDC relay again (docs/outbox.md)`
  );
}

export interface SlotInfo {
  slot: string;
  plugin: string | null;
  active: boolean;
  activePid: number | null;
  walStatus: string | null;
  retainedBytes: number;
}

export async function slots(db: Queryable): Promise<SlotInfo[]> {
  const r = await db.query<{
    slot_name: string;
    plugin: string | null;
    active: boolean;
    active_pid: number | null;
    wal_status: string | null;
    retained: string | null;
  }>(
    `SELECT slot_name, plugin, active, active_pid, wal_status, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::text AS retained FROM pg_replication_slots ORDER BY slot_name`,
  );
  return r.rows.map((s) => ({
    slot: s.slot_name,
    plugin: s.plugin,
    active: s.active,
    activePid: s.active_pid,
    walStatus: s.wal_status,
    retainedBytes: Number(s.retained ?? 0),
  }));
}

/** Refuses a server the CDC relay cannot use safely, saying why and what to set. */
export async function checkCdcServer(db: Queryable, allowUnboundedSlot: boolean): Promise<void> {
  const level = (await db.query<{ wal_level: string }>('SHOW wal_level')).rows[0].wal_level;
  if (level !== 'logical')
    throw new CdcRefusal(
      `PostgreSQL has wal_level = ${level}; the CDC relay needs wal_level = logical (a server restart), or use the polling relay`,
    );
  const keep = (await db.query<{ max_slot_wal_keep_size: string }>('SHOW max_slot_wal_keep_size')).rows[0]
    .max_slot_wal_keep_size;
  if (keep === '-1' && !allowUnboundedSlot)
    throw new CdcRefusal(
      'PostgreSQL has max_slot_wal_keep_size = -1: a replication slot whose reader stops keeps WAL without bound until the disk is full and PostgreSQL stops ' +
        '(one such slot kept 412 GB until "No space left on device"). Set max_slot_wal_keep_size (e.g. 10GB), or pass --allow-unbounded-slot to accept that risk',
    );
}

/**
 * What a relay checks about its slot before it holds the lease: an existing
 * slot must be test_decoding's and not lost. Whether it is being read now is
 * not checked: the relay holding the lease reads it, and a standby waits.
 */
export async function checkSlot(db: Queryable, slot: string): Promise<void> {
  const s = (await slots(db)).find((x) => x.slot === slot);
  if (s === undefined) return;
  if (s.plugin !== 'test_decoding')
    throw new CdcRefusal(
      `replication slot ${slot} uses plugin ${s.plugin ?? '(physical)'}, not test_decoding: it belongs to another program; choose another --slot`,
    );
  if (s.walStatus === 'lost') throw new CdcSlotLost(lostSlotMessage(slot));
}

/**
 * Creates the slot (test_decoding) if missing, so that it holds what is
 * committed from now on; refuses one with another plugin, or a lost one.
 * Another relay creating it at the same moment is no refusal. Whether the
 * slot is being read is not checked (see checkSlot).
 */
export async function ensureSlot(db: Queryable, slot: string): Promise<void> {
  const s = (await slots(db)).find((x) => x.slot === slot);
  if (s === undefined) {
    try {
      await db.query(`SELECT pg_create_logical_replication_slot($1, 'test_decoding')`, [slot]);
      return;
    } catch (err) {
      // 42710 duplicate_object: created meanwhile by another relay; checked below like any existing slot.
      if ((err as { code?: string }).code !== '42710') throw err;
    }
  }
  await checkSlot(db, slot);
}

const COLUMN = /(\w+)\[[^\]]+\]:('(?:[^']|'')*'|\S+)/g;

/** How test_decoding starts the line of an insert into the outbox table. */
const OUTBOX_INSERT_HEAD = 'table public.verdict_outbox: INSERT: ';

/**
 * The lines a round reads: the transactions' BEGIN and COMMIT and the outbox
 * inserts, nothing else. The slot also decodes every other change in the
 * database, the relay's own published_at marks included (each an UPDATE line
 * carrying the whole row, payload and all); filtered in the query they are
 * neither sent to the relay nor scanned by it, and the round loop ignores
 * them anyway (parseOutboxInsert). changesMax still counts them.
 */
const PEEK_SQL =
  'SELECT lsn::text AS lsn, data FROM pg_logical_slot_peek_changes($1, NULL, $2) ' +
  `WHERE starts_with(data, 'BEGIN') OR starts_with(data, 'COMMIT') OR starts_with(data, '${OUTBOX_INSERT_HEAD}')`;

/** The columns of a test_decoding INSERT line into verdict_outbox, or null for any other line. */
export function parseOutboxInsert(line: string): Record<string, string | null> | null {
  const head = OUTBOX_INSERT_HEAD;
  if (!line.startsWith(head)) return null;
  const out: Record<string, string | null> = {};
  for (const m of line.slice(head.length).matchAll(COLUMN)) {
    const v = m[2];
    out[m[1]] = v === 'null' ? null : v.startsWith("'") ? v.slice(1, -1).replaceAll("''", "'") : v;
  }
  return out;
}

export interface CdcRelayOptions {
  db: Queryable;
  sink: Sink;
  /** The relay's single lease (partition 0): one CDC relay reads a slot at a time. */
  fence: Fence;
  slot: string;
  /** Changes read per round at most: a transaction of one event is three (BEGIN, INSERT, COMMIT). */
  changesMax?: number;
  /** The window: PubAcks outstanding at once, at most (default PUBACKS_MAX); one per aggregate. */
  concurrency?: number;
  publishTimeoutMs?: number;
  onError?: (err: unknown) => void;
}

export class CdcRelay {
  /** Whether this relay made sure of its slot since it last took the lease. */
  private slotReady = false;

  constructor(private readonly o: CdcRelayOptions) {}

  /**
   * One batch: peek, publish in commit order, mark, advance the slot past
   * what was confirmed. Throws CdcSlotLost when the slot is lost: no later
   * round can read it.
   */
  async round(): Promise<RoundReport & { advancedTo: string | null }> {
    const owned = this.o.fence.owned();
    const epoch = owned.get(0);
    if (epoch === undefined) {
      this.slotReady = false;
      return { read: 0, published: 0, byPartition: new Map(), failed: 0, fenced: 0, advancedTo: null };
    }
    if (!this.slotReady) {
      await ensureSlot(this.o.db, this.o.slot);
      this.slotReady = true;
    }
    let changes: { lsn: string; data: string }[];
    try {
      changes = (
        await this.o.db.query<{ lsn: string; data: string }>(PEEK_SQL, [this.o.slot, this.o.changesMax ?? 3_000])
      ).rows;
    } catch (err) {
      const e = err as { message?: string };
      // A lost slot cannot be read again: say so once, instead of retrying for ever.
      const s = await slots(this.o.db)
        .then((all) => all.find((x) => x.slot === this.o.slot))
        .catch(() => undefined);
      if (s?.walStatus === 'lost') throw new CdcSlotLost(lostSlotMessage(this.o.slot));
      if (s === undefined) this.slotReady = false;
      if (/is active for PID/.test(e.message ?? ''))
        throw new CdcRefusal(`replication slot ${this.o.slot}: ${e.message}; another program reads it`);
      throw explainMissingTable(err, 'outbox');
    }
    // Only whole transactions: events are taken up to the last COMMIT seen.
    const events: PendingEvent[] = [];
    const commitOf: string[] = [];
    // The outbox row id of each event (a PendingEvent's key is its index in `events`).
    const rowIds: string[] = [];
    let pending: PendingEvent[] = [];
    const rowIdOf = new Map<PendingEvent, string>();
    let lastCommit: string | null = null;
    for (const c of changes) {
      if (c.data.startsWith('BEGIN')) pending = [];
      else if (c.data.startsWith('COMMIT')) {
        for (const e of pending) {
          rowIds.push(rowIdOf.get(e) ?? '');
          events.push(e);
          commitOf.push(c.lsn);
        }
        pending = [];
        lastCommit = c.lsn;
      } else {
        const row = parseOutboxInsert(c.data);
        if (row === null) continue;
        let payload: unknown;
        try {
          payload = JSON.parse(row.payload ?? 'null');
        } catch {
          throw new CdcRefusal(`outbox row ${row.id} at ${c.lsn} has a payload the relay cannot read back as JSON`);
        }
        const e: PendingEvent = {
          key: String(events.length + pending.length),
          partition: 0,
          message: {
            id: row.event_id ?? '',
            aggregate: row.aggregate ?? '',
            seq: Number(row.seq),
            type: row.type ?? '',
            epoch: 0,
            payload,
          },
        };
        if (!/^\d{1,19}$/.test(row.id ?? ''))
          throw new CdcRefusal(`an outbox insert at ${c.lsn} has no readable row id: ${JSON.stringify(row.id)}`);
        rowIdOf.set(e, row.id ?? '');
        pending.push(e);
      }
    }
    const { done, failed } = await publishInOrder(
      events,
      { ...this.o, concurrency: this.o.concurrency ?? PUBACKS_MAX, publishTimeoutMs: this.o.publishTimeoutMs ?? 5_000 },
      owned,
    );
    // Advance only past a prefix of transactions whose every event was confirmed.
    const confirmed = new Set(done);
    let upTo = failed === 0 ? lastCommit : null;
    if (failed > 0) {
      for (let i = 0; i < events.length && confirmed.has(events[i].key); i++)
        if (i + 1 === events.length || commitOf[i + 1] !== commitOf[i]) upTo = commitOf[i];
    }
    // Mark the confirmed rows published, before the slot moves: a crash between the two republishes them
    // (same message ids) and marks them again; the other order could leave confirmed rows unmarked for ever,
    // and only marked rows may be pruned.
    // The mark is fenced by the lease epoch (markPublished): a relay that lost the lease marks nothing, and
    // neither does it move the slot, which the new holder reads.
    const marked = done.map((k) => rowIds[Number(k)]);
    if (marked.length > 0 && !(await markPublished(this.o.db, this.o.fence, 0, epoch, marked))) {
      this.slotReady = false;
      return {
        read: events.length,
        published: done.length,
        byPartition: onePartition(done.length),
        failed,
        fenced: 1,
        advancedTo: null,
      };
    }
    if (upTo !== null) await this.o.db.query('SELECT pg_replication_slot_advance($1, $2::pg_lsn)', [this.o.slot, upTo]);
    return {
      read: events.length,
      published: done.length,
      byPartition: onePartition(done.length),
      failed,
      fenced: 0,
      advancedTo: upTo,
    };
  }
}

/** A CDC relay reads one slot under one lease: partition 0. */
function onePartition(published: number): Map<number, number> {
  return published > 0 ? new Map([[0, published]]) : new Map();
}
