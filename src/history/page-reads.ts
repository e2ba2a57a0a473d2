// Reading the history store's pages (./page.ts) back: a transaction by its
// id, through the Bloom filters of the pages' time index, and the
// transactions of a bucket's pages for a search. The store (./store.ts)
// writes and prunes them; every value read is checked as any read from disk
// is, and a malformed page or line is said through onError and skipped.

import type { Level } from 'level';
import { txnIdAtMs } from '../domain/txn-id.ts';
import { bucketOf, gPrefix, pageKey, rKey, SEP, seqOfKey } from './keys.ts';
import { bloomHas, decodePage, type Page, type PageLine, parseBucketValue, replayLine } from './page.ts';
import type { HistoryRecord } from './record.ts';

/** A timed id's transaction is looked for first in the pages of this window around the time its id carries. */
const TIMED_WINDOW_MS = 3_600_000;

export class PageReads {
  constructor(
    private readonly db: Level<string, string>,
    private readonly onError: (err: Error, what: string) => void,
  ) {}

  /** A page's value decoded, or null (said) when it is malformed. */
  decode(seq: number, value: string): Page | null {
    const p = decodePage(value);
    if (typeof p !== 'string') return p;
    this.onError(new Error(`the history page ${seq} on disk is malformed (${p}); it is skipped`), 'read');
    return null;
  }

  /**
   * The transactions of `ids` found in pages, as records. Each is looked for where it can be: the page it was written
   * to (`pageOf`, the store's recent ones); else, when its decision's time is known (`decidedAtMs`), that time's bucket
   * only (a page holds a transaction under its decision's time); else around the time a timed id carries, then every
   * page, newest first. The Bloom filters say which pages to decode; a false positive is decoded and passed over.
   */
  async find(
    ids: readonly string[],
    decidedAtMs: (id: string) => number,
    pageOf: Pick<RecentPages, 'get'>,
  ): Promise<Map<string, HistoryRecord>> {
    const found = new Map<string, HistoryRecord>();
    const pages = new Map<number, Map<string, { page: Page; line: PageLine }> | null>();
    const look = async (seq: number, id: string): Promise<boolean> => {
      let lines = pages.get(seq);
      if (lines === undefined) {
        const v = await this.db.get(pageKey(seq));
        const page = v === undefined ? null : this.decode(seq, v);
        lines = page === null ? null : new Map(page.lines.map((line) => [line.txnId, { page, line }] as const));
        pages.set(seq, lines);
      }
      const hit = lines?.get(id);
      if (hit === undefined) return false;
      const rec = replayLine(hit.page, hit.line);
      if (typeof rec === 'string') {
        this.onError(new Error(`the history page ${seq} is malformed (${rec}); the transaction is skipped`), 'read');
        return false;
      }
      found.set(id, rec);
      return true;
    };
    const scan = async (gte: string, lt: string, wanted: Set<string>): Promise<void> => {
      if (wanted.size === 0) return;
      for await (const [k, v] of this.db.iterator({ gte, lt, reverse: true })) {
        const b = parseBucketValue(v);
        if (b === null) continue;
        for (const id of wanted) if (bloomHas(b.bloom, id) && (await look(seqOfKey(k), id))) wanted.delete(id);
        if (wanted.size === 0) return;
      }
    };
    const everywhere = new Set<string>();
    for (const id of ids) {
      const seq = pageOf.get(id);
      if (seq !== undefined && (await look(seq, id))) continue;
      const atMs = decidedAtMs(id);
      if (atMs > 0) {
        await scan(gPrefix(bucketOf(atMs)), `${gPrefix(bucketOf(atMs))}\uffff`, new Set([id]));
        continue;
      }
      const timed = txnIdAtMs(id);
      if (timed !== null) {
        const wanted = new Set([id]);
        const from = gPrefix(bucketOf(timed - TIMED_WINDOW_MS));
        await scan(from, `${gPrefix(bucketOf(timed + TIMED_WINDOW_MS))}\uffff`, wanted);
        if (wanted.size === 0) continue;
      }
      everywhere.add(id);
    }
    await scan(`G${SEP}`, `G${SEP}\uffff`, everywhere);
    return found;
  }

  /**
   * The transactions of pages `seqs` (one bucket's) that `matches` takes and `seen` does not hold yet, as records; one
   * with a record of its own is left out (that record replaces the page's copy, and its own index names it).
   */
  async inBucket(
    seqs: readonly number[],
    matches: (rec: HistoryRecord) => boolean,
    seen: Set<string>,
  ): Promise<HistoryRecord[]> {
    const values = await this.db.getMany(seqs.map(pageKey));
    const fromPages: HistoryRecord[] = [];
    for (let i = 0; i < seqs.length; i++) {
      const v = values[i];
      const page = v === undefined ? null : this.decode(seqs[i] as number, v);
      if (page === null) continue;
      for (const line of page.lines) {
        if (seen.has(line.txnId)) continue;
        const rec = replayLine(page, line);
        if (typeof rec === 'string') {
          this.onError(new Error(`the history page ${seqs[i]} is malformed (${rec}); the line is skipped`), 'read');
          continue;
        }
        if (!matches(rec)) continue;
        seen.add(line.txnId);
        fromPages.push(rec);
      }
    }
    if (fromPages.length === 0) return [];
    const own = await this.db.getMany(fromPages.map((r) => rKey(r.txnId)));
    return fromPages.filter((_, i) => own[i] === undefined);
  }
}

/**
 * The page of each transaction written recently, so a late change (an ACK, the Forget, a status question, an act)
 * finds it at once: two generations of at most half of `max` each, the older dropped whole when the newer fills (no
 * eviction one by one, which in a Map costs a walk over the deleted entries at its front).
 */
export class RecentPages {
  private current = new Map<string, number>();
  private previous = new Map<string, number>();

  constructor(private readonly max: number) {}

  get(txnId: string): number | undefined {
    return this.current.get(txnId) ?? this.previous.get(txnId);
  }

  set(txnId: string, seq: number): void {
    this.current.set(txnId, seq);
    if (this.current.size >= this.max / 2) {
      this.previous = this.current;
      this.current = new Map();
    }
  }

  delete(txnId: string): void {
    this.current.delete(txnId);
    this.previous.delete(txnId);
  }
}
