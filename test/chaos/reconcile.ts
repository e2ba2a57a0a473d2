// The end of a chaos run: let the healed system settle (every wait bounded),
// then hold the data in PostgreSQL and MariaDB against what the clients were
// told and what the cluster decided.
//
//   atomic      for every transaction, the shop row, the ledger row and the
//               books row are all present or all absent (AC1);
//   acked       every COMMIT a client was told is in both; every ABORT a
//               client was told is in neither; a transaction whose Commit
//               never left the client is in neither;
//   validity    a transaction whose ledger debit breaks the CHECK constraint
//               (the ledger votes NO) never commits (AC2);
//   decisions   the cluster's outcome (GetOutcome, R1) is final for every
//               transaction and matches the data;
//   prepared    no prepared transaction of this cluster is left in
//               pg_prepared_xacts, nor an XA branch in XA RECOVER (AC4:
//               nobody stays in doubt);
//   stray       no row belongs to a transaction the clients never began.
import type { VerdictClient } from '../../src/client/client.ts';
import { encodePart } from '../../src/participant/postgres-gid.ts';
import { sleep } from '../process/harness.ts';
import { xidScope } from '../../src/participant/resources/mysql/xid.ts';
import { preparedXacts, sql } from '../pg/harness.ts';
import { mysqlQuery, xaRecover } from '../mysql/harness.ts';
import { DEBITS, ORDERS, POSTINGS, type TxnRecord } from './workload.ts';

export interface Violation {
  txnId: string;
  what: string;
}

export interface ReconcileOptions {
  client: VerdictClient;
  txns: readonly TxnRecord[];
  tag: string;
  clusterId: string;
  shopUrl: string;
  ledgerUrl: string;
  /** The MariaDB database of the `books` participant. */
  booksUrl: string;
  /** Bound on waiting for every outcome to be final. */
  outcomesWaitMs: number;
  /** Bound on waiting for pg_prepared_xacts to drain (the adapter's orphan scan runs every 30 s). */
  preparedWaitMs: number;
}

export interface ReconcileReport {
  violations: Violation[];
  /** The cluster's final outcome per transaction id (only for those whose Commit was sent). */
  outcomes: Map<string, 'COMMITTED' | 'ABORTED' | 'UNSETTLED'>;
  /** Transactions whose UNKNOWN outcome we ended with Abort (what an application does with an answer it never got). */
  forcedAborts: number;
}

const OUTCOME_QUERIES_IN_FLIGHT = 8;

export async function reconcile(o: ReconcileOptions): Promise<ReconcileReport> {
  const violations: Violation[] = [];
  const outcomes = new Map<string, 'COMMITTED' | 'ABORTED' | 'UNSETTLED'>();
  let forcedAborts = 0;

  // 1. A final outcome for every transaction whose Commit was sent.
  const sent = o.txns.filter((t) => t.answer !== 'not-sent');
  const deadline = Date.now() + o.outcomesWaitMs;
  let next = 0;
  const settleOne = async (t: TxnRecord): Promise<void> => {
    let last = '';
    while (Date.now() < deadline) {
      try {
        let r = await o.client.outcome(t.id, { callTimeoutMs: 5_000 });
        // A client's question decides nothing; Abort does, and answers what the log then holds (COMMITTED if it was too
        // late).
        if (r.outcome === 'UNKNOWN') {
          r = await o.client.abort(t.id, 'chaos reconcile: the client never learnt the outcome', {
            callTimeoutMs: 5_000,
          });
          forcedAborts++;
        }
        if (r.outcome === 'COMMITTED' || r.outcome === 'ABORTED') {
          outcomes.set(t.id, r.outcome);
          return;
        }
        last = `${r.outcome}${r.reason ? `: ${r.reason}` : ''}`;
      } catch (err) {
        last = (err as Error).message;
      }
      await sleep(250);
    }
    outcomes.set(t.id, 'UNSETTLED');
    violations.push({
      txnId: t.id,
      what: `no final outcome within ${o.outcomesWaitMs} ms after healing (AC4); last answer: ${last}`,
    });
  };
  await Promise.all(
    Array.from({ length: OUTCOME_QUERIES_IN_FLIGHT }, async () => {
      while (next < sent.length) await settleOne(sent[next++]);
    }),
  );

  // 2. Nothing of this cluster left prepared in PostgreSQL.
  const prefix = `verdict:${encodePart(o.clusterId)}:`;
  // pg_prepared_xacts is server-wide: asking through one database sees both.
  const prepared = (): Promise<{ gid: string; database: string }[]> => preparedXacts(o.shopUrl, prefix);
  const preparedDeadline = Date.now() + o.preparedWaitMs;
  let left = await prepared();
  while (left.length > 0 && Date.now() < preparedDeadline) {
    await sleep(500);
    left = await prepared();
  }
  for (const p of left)
    violations.push({
      txnId: p.gid,
      what: `still in pg_prepared_xacts of database ${p.database} ${o.preparedWaitMs} ms after healing (AC4)`,
    });
  // XA RECOVER is server-wide too; this cluster's branches start with its gtrid prefix.
  const gtridPrefix = xidScope(o.clusterId, 'books').gtridPrefix;
  const branches = async (): Promise<string[]> =>
    (await xaRecover(o.booksUrl)).filter((x) => x.gtrid.startsWith(gtridPrefix)).map((x) => `${x.gtrid},${x.bqual}`);
  let branchesLeft = await branches();
  while (branchesLeft.length > 0 && Date.now() < preparedDeadline) {
    await sleep(500);
    branchesLeft = await branches();
  }
  for (const b of branchesLeft)
    violations.push({ txnId: b, what: `still in XA RECOVER of MariaDB ${o.preparedWaitMs} ms after healing (AC4)` });

  // 3. The data against the clients' answers and the cluster's decisions.
  const like = `${o.tag}-%`;
  const shop = new Set(
    (await sql<{ txn_id: string }>(o.shopUrl, `SELECT txn_id FROM ${ORDERS} WHERE txn_id LIKE $1`, [like])).map(
      (r) => r.txn_id,
    ),
  );
  const ledger = new Set(
    (await sql<{ txn_id: string }>(o.ledgerUrl, `SELECT txn_id FROM ${DEBITS} WHERE txn_id LIKE $1`, [like])).map(
      (r) => r.txn_id,
    ),
  );
  const books = new Set(
    (
      await mysqlQuery<{ txn_id: string }>(o.booksUrl, `SELECT txn_id FROM ${POSTINGS} WHERE txn_id LIKE ?`, [like])
    ).map((r) => r.txn_id),
  );
  const known = new Set(o.txns.map((t) => t.id));
  for (const id of new Set([...shop, ...ledger, ...books]))
    if (!known.has(id)) violations.push({ txnId: id, what: 'a row of a transaction no client began' });
  for (const t of o.txns) {
    const inShop = shop.has(t.id);
    const inLedger = ledger.has(t.id);
    const inBooks = books.has(t.id);
    const where = `shop ${inShop ? 'has' : 'lacks'} the order, ledger ${inLedger ? 'has' : 'lacks'} the debit, books (MariaDB) ${inBooks ? 'has' : 'lacks'} the posting`;
    const inAll = inShop && inLedger && inBooks;
    if (inShop !== inLedger || inShop !== inBooks)
      violations.push({ txnId: t.id, what: `not all-or-nothing (AC1): ${where}` });
    const inData = inShop || inLedger || inBooks;
    if (t.answer === 'committed' && !inAll)
      violations.push({ txnId: t.id, what: `the client was told COMMITTED but ${where}` });
    if ((t.answer === 'aborted' || t.answer === 'not-sent') && inData)
      violations.push({
        txnId: t.id,
        what: `the client was told ${t.answer === 'aborted' ? 'ABORTED' : 'nothing (Begin failed, Commit never sent)'} but ${where}`,
      });
    if (t.intent === 'no' && (inData || t.answer === 'committed' || outcomes.get(t.id) === 'COMMITTED'))
      violations.push({
        txnId: t.id,
        what: `committed although the ledger must vote NO (AC2); client: ${t.answer}, cluster: ${outcomes.get(t.id)}`,
      });
    const decided = outcomes.get(t.id);
    if (decided === 'COMMITTED' && !inAll)
      violations.push({ txnId: t.id, what: `the cluster decided COMMITTED but ${where}` });
    if (decided === 'ABORTED' && inData)
      violations.push({ txnId: t.id, what: `the cluster decided ABORTED but ${where}` });
    if (
      decided !== undefined &&
      decided !== 'UNSETTLED' &&
      (t.answer === 'committed' || t.answer === 'aborted') &&
      decided.toLowerCase() !== t.answer
    ) {
      violations.push({
        txnId: t.id,
        what: `the client was told ${t.answer.toUpperCase()}, the cluster now says ${decided} (R1)`,
      });
    }
  }
  return { violations, outcomes, forcedAborts };
}
