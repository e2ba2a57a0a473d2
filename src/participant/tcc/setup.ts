// Wiring a TCC participant for the runtime (src/participant/runtime.ts): the
// resource (memory: handlers over a journaled state; postgres: handlers over
// SQL with the barrier table), the engine's own journal (transaction records
// only, `journal-tcc.log`), and the reserve watcher started beside the
// engine (src/participant/compose.ts builds it). The PostgreSQL half is imported only when asked for, so a memory
// TCC participant never loads `pg`.
import { join } from 'node:path';
import { FileJournal } from '../journal.ts';
import { isTxnRecord, TxnJournalState } from '../prepared-recovery.ts';
import type { ReserveWatcher } from './expiry.ts';
import {
  isTccRecord,
  MemoryTccResource,
  replayTcc,
  TccMemoryState,
  type TccMemoryHandlers,
  type TccRecord,
} from './memory.ts';
import type { PostgresTccResource, TccPgHandlers } from './postgres.ts';
import type { TccCounts, TccReserves } from './barrier.ts';
import type { EngineLog, Resource, TxnRecord } from '../types.ts';

export const TCC_ENGINE_JOURNAL_FILE = 'journal-tcc.log';
export const TCC_MEMORY_JOURNAL_FILE = 'tcc-barrier.log';

/** `tcc` of startParticipant: handlers over memory, or over PostgreSQL with the barrier table. */
export type TccParticipantOptions =
  | { memory: TccMemoryHandlers<unknown>; postgres?: undefined }
  | {
      postgres: {
        url: string;
        handlers: TccPgHandlers;
        concurrency?: number;
        barrierRetentionMs?: number;
        cleanupIntervalMs?: number;
      };
      memory?: undefined;
    };

export type TccResource = (MemoryTccResource<unknown> | PostgresTccResource) & Resource & TccReserves;

export interface TccSetup {
  resource: TccResource;
  journal: FileJournal<TxnRecord>;
  records: TxnRecord[];
  /** Once the engine and the reserve watcher run: counts the watcher's expiries, and starts the barrier clean-up. */
  start(watcher: ReserveWatcher): void;
  counts(): TccCounts & { expired: number };
  close(): Promise<void>;
}

export async function openTccParticipant(
  o: TccParticipantOptions & {
    clusterId: string;
    participantId: string;
    dataDir: string;
    log: EngineLog;
    compactAfterRecords?: number;
  },
): Promise<TccSetup> {
  let resource: TccResource;
  let barrierJournal: FileJournal<TccRecord> | null = null;
  let cleanupTimer: NodeJS.Timeout | null = null;
  if (o.memory !== undefined) {
    const durable = new TccMemoryState(o.participantId, o.memory);
    barrierJournal = await FileJournal.open<TccRecord>({
      path: join(o.dataDir, TCC_MEMORY_JOURNAL_FILE),
      fold: durable,
      isRecord: isTccRecord,
      compactAfterRecords: o.compactAfterRecords,
      log: o.log,
    });
    const journal = barrierJournal;
    resource = new MemoryTccResource({
      participantId: o.participantId,
      handlers: o.memory,
      live: replayTcc(o.participantId, o.memory, durable.snapshot()),
      journal,
      clock: { nowMs: () => Date.now() },
      log: o.log,
    });
  } else {
    const { PostgresTccResource } = await import('./postgres.ts');
    resource = await PostgresTccResource.open({
      participantId: o.participantId,
      url: o.postgres.url,
      handlers: o.postgres.handlers,
      concurrency: o.postgres.concurrency,
      barrierRetentionMs: o.postgres.barrierRetentionMs,
      log: o.log,
    });
  }
  const state = new TxnJournalState();
  let journal: FileJournal<TxnRecord>;
  try {
    journal = await FileJournal.open<TxnRecord>({
      path: join(o.dataDir, TCC_ENGINE_JOURNAL_FILE),
      fold: state,
      isRecord: isTxnRecord,
      compactAfterRecords: o.compactAfterRecords,
      log: o.log,
    });
  } catch (err) {
    await barrierJournal?.close();
    if ('close' in resource) await resource.close();
    throw err;
  }
  let watcher: ReserveWatcher | null = null;
  return {
    resource,
    journal,
    records: adoptHeldReserves(state.txnRecords(), resource, o.log),
    start(w) {
      watcher = w;
      if ('cleanup' in resource) {
        const pgResource = resource;
        const everyMs = o.postgres?.cleanupIntervalMs ?? 3_600_000;
        const tick = (): void => {
          pgResource.cleanup().then(
            (n) => n > 0 && o.log.info({ barrierRowsDeleted: n }, 'old TCC barrier rows deleted'),
            (err: Error) =>
              o.log.warn({ err: err.message }, 'TCC barrier clean-up failed; trying again at the next interval'),
          );
          cleanupTimer = setTimeout(tick, everyMs);
          cleanupTimer.unref();
        };
        tick();
      }
    },
    counts: () => ({ ...resource.tccCounts(), expired: watcher?.expired ?? 0 }),
    async close() {
      if (cleanupTimer !== null) clearTimeout(cleanupTimer);
      await barrierJournal?.close();
      if ('close' in resource) await resource.close();
    },
  };
}

/**
 * A reserve the barrier holds but the engine's journal does not know: the
 * Try ran and was recorded, and the process died before the engine's
 * prepared record, so no YES left. It is adopted as prepared, in doubt: the
 * engine asks the cluster, which logs ABORT for it (R3), and the Cancel
 * releases it. Without this, nobody would ever release it: a leader sends no
 * ABORT to a participant that never voted YES.
 */
export function adoptHeldReserves(records: TxnRecord[], reserves: TccReserves, log: EngineLog): TxnRecord[] {
  const known = new Set(records.map((r) => r.txnId));
  const out = [...records];
  for (const h of reserves.heldReserves()) {
    if (known.has(h.txnId)) continue;
    log.warn(
      { txnId: h.txnId },
      'reserve held but not in the journal (the process stopped before its vote): in doubt, asking the cluster',
    );
    out.push({ kind: 'prepared', txnId: h.txnId, atMs: Date.now(), payloadB64: '', participants: [] });
  }
  return out;
}
