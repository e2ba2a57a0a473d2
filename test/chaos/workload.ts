// The chaos workload: concurrent clients, each transaction inserting an order
// row in `shop` and a debit row in `ledger` (two PostgreSQL databases) and a
// posting row in `books` (a MariaDB database, the XA participant) under one
// Verdict transaction,
// with the participants' own SQL payloads ({"sql": [...]}, see
// src/participant/postgres.ts). About one in ten debits is negative, which
// the ledger's CHECK constraint refuses at PREPARE: that participant votes
// NO and the transaction must abort (AC2). Every client-side answer is
// recorded, so the reconciliation can hold the cluster to it.
import { OutcomeUnknownError, VerdictError } from '../../src/client/errors.ts';
import type { VerdictClient } from '../../src/client/client.ts';
import { Rng } from '../../src/raft/rng.ts';
import { sleep } from '../process/harness.ts';
import { withClient } from '../pg/harness.ts';
import { mysqlQuery } from '../mysql/harness.ts';

export const ORDERS = 'chaos_orders';
export const DEBITS = 'chaos_debits';
export const POSTINGS = 'chaos_postings';

/** What the client was told. 'not-sent': Begin failed, so no Commit ever left the client. */
export type ClientAnswer = 'committed' | 'aborted' | 'unknown' | 'not-sent';

export interface TxnRecord {
  id: string;
  /** 'no': the ledger must vote NO (its debit breaks the CHECK constraint). */
  intent: 'commit' | 'no';
  answer: ClientAnswer;
  /** Date.now() when the client got its answer (or gave up). */
  answeredAtMs: number;
  detail: string;
}

/** Creates the tables in the shop, ledger and books databases (idempotent: a shared server may already have them). */
export async function createTables(shopUrl: string, ledgerUrl: string, booksUrl: string): Promise<void> {
  await mysqlQuery(
    booksUrl,
    `CREATE TABLE IF NOT EXISTS ${POSTINGS} (txn_id VARCHAR(100) PRIMARY KEY, amount INT NOT NULL) ENGINE=InnoDB`,
  );
  await withClient(shopUrl, (c) =>
    c.query(`CREATE TABLE IF NOT EXISTS ${ORDERS} (txn_id text PRIMARY KEY, sku text NOT NULL, qty int NOT NULL)`),
  );
  await withClient(ledgerUrl, (c) =>
    c.query(`CREATE TABLE IF NOT EXISTS ${DEBITS} (txn_id text PRIMARY KEY, amount int NOT NULL CHECK (amount > 0))`),
  );
}

export interface WorkloadOptions {
  client: VerdictClient;
  /** Every txn id starts with it: unique per run, so a shared server's older rows are never counted. */
  tag: string;
  clients: number;
  seed: number;
  /** The participants' prepare timeout asked at Begin. */
  txnTimeoutMs: number;
}

export class Workload {
  readonly txns: TxnRecord[] = [];
  private stopping = false;
  private running: Promise<void> | null = null;

  constructor(private readonly o: WorkloadOptions) {}

  start(): void {
    this.running = Promise.all(Array.from({ length: this.o.clients }, (_, w) => this.worker(w))).then(() => undefined);
  }

  /** Lets every client finish the transaction in hand (each is bounded by the client's deadline), then resolves. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }

  /** Transactions the clients were told committed after `sinceMs`. */
  committedSince(sinceMs: number): number {
    return this.txns.filter((t) => t.answer === 'committed' && t.answeredAtMs >= sinceMs).length;
  }

  private async worker(w: number): Promise<void> {
    const rng = new Rng(this.o.seed * 31 + w);
    for (let i = 0; !this.stopping; i++) {
      const id = `${this.o.tag}-c${w}-${i}`;
      const intent = rng.chance(0.1) ? 'no' : 'commit';
      const rec: TxnRecord = { id, intent, answer: 'not-sent', answeredAtMs: 0, detail: '' };
      this.txns.push(rec);
      try {
        const tx = await this.o.client.begin({ txnId: id, timeoutMs: this.o.txnTimeoutMs });
        tx.enlist('shop', {
          sql: [`INSERT INTO ${ORDERS} (txn_id, sku, qty) VALUES ('${id}', 'sku-${rng.int(100)}', ${1 + rng.int(5)})`],
        });
        const amount = intent === 'no' ? -5 : 1 + rng.int(100);
        tx.enlist('ledger', { sql: [`INSERT INTO ${DEBITS} (txn_id, amount) VALUES ('${id}', ${amount})`] });
        tx.enlist('books', { sql: [`INSERT INTO ${POSTINGS} (txn_id, amount) VALUES ('${id}', ${amount})`] });
        rec.answer = 'unknown';
        const r = await tx.commit();
        rec.answer = r.outcome === 'COMMITTED' ? 'committed' : 'aborted';
        rec.detail = r.reason;
      } catch (err) {
        // 'not-sent' stays when Begin failed; after Commit was sent, any failure leaves the outcome unknown to this
        // client.
        if (!(err instanceof OutcomeUnknownError || err instanceof VerdictError)) throw err;
        rec.detail = err.message;
        // No leader for a moment: do not spin.
        await sleep(100);
      } finally {
        rec.answeredAtMs = Date.now();
      }
    }
  }
}
