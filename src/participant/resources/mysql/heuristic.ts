// `verdict participant resolve --resource mysql`: the operator's heuristic act
// (R4) on one prepared XA branch, by the rules every database shares
// (resolveByHand in src/participant/heuristic.ts): the act is recorded in
// verdict_heuristics and committed on its own *before* XA COMMIT / XA
// ROLLBACK, so a crash in between leaves a recorded act whose branch is still
// prepared, and running the command again finishes it.
import mysql from 'mysql2/promise';
import {
  checkText,
  HeuristicError,
  resolveByHand,
  type HeuristicStore,
  type ResolveOptions,
  type ResolveResult,
} from '../../heuristic.ts';
import { describeMySqlError, ER_XAER_NOTA, mysqlErrno, redact } from './errors.ts';
import * as tables from './tables.ts';
import { parseXidText, sqlXid, xidOf, xidScope, xidText, type Xid } from './xid.ts';

/** Longer than a running participant holds a just-prepared branch's session (holdPreparedMs). */
const ATTACHED_WAIT_MS = 10_000;

/** target: a txn id, or this participant's xid of it in its text form `gtrid,bqual`. */
export type MySqlResolveOptions = ResolveOptions;

/** Works with the cluster down; the participant process reports the act when the cluster is back. */
export async function resolveMySqlByHand(o: MySqlResolveOptions): Promise<ResolveResult> {
  checkText(o.operator, o.reason);
  const scope = xidScope(o.clusterId, o.participantId);
  let xid: Xid;
  let txnId: string;
  if (o.target.includes(',')) {
    const p = parseXidText(scope, o.target);
    if (!p.ok) throw new HeuristicError(`${p.reason}; check --id and --cluster-id, or give the transaction id`);
    if (p.parsed.kind !== 'readable')
      throw new HeuristicError(
        `xid ${o.target} is hashed and does not name its transaction; give the transaction id instead`,
      );
    xid = p.xid;
    txnId = p.parsed.txnId;
  } else {
    txnId = o.target;
    xid = xidOf(scope, txnId);
  }
  let conn: mysql.Connection;
  try {
    conn = await mysql.createConnection({ uri: o.url, connectTimeout: 10_000 });
  } catch (err) {
    throw new HeuristicError(`cannot connect to MySQL at ${redact(o.url)}: ${describeMySqlError(err)}`);
  }
  try {
    await tables.ensureHeuristicTable(conn);
    const gid = xidText(xid);
    const store: HeuristicStore = {
      preparedList: 'XA RECOVER',
      command: (outcome) => (outcome === 'COMMITTED' ? 'XA COMMIT' : 'XA ROLLBACK'),
      isPrepared: async () => {
        const [rows] = (await conn.query('XA RECOVER')) as unknown as [
          { formatID: number; gtrid_length: number; bqual_length: number; data: Buffer | string }[],
        ];
        return rows.some((r) => {
          const data = Buffer.isBuffer(r.data) ? r.data : Buffer.from(String(r.data), 'latin1');
          return (
            Number(r.formatID) === xid.formatId &&
            data.equals(Buffer.from(xid.gtrid + xid.bqual, 'latin1')) &&
            Number(r.gtrid_length) === xid.gtrid.length
          );
        });
      },
      actOf: (g) => tables.actOf(conn, g),
      record: (act) => tables.recordAct(conn, act),
      finish: async (_g, outcome) => {
        // A running participant holds the session of a branch it just prepared for up to
        // holdPreparedMs (2 s), during which the server answers XAER_NOTA: wait that out.
        const giveUpAtMs = Date.now() + ATTACHED_WAIT_MS;
        for (;;) {
          try {
            await conn.query(`${outcome === 'COMMITTED' ? 'XA COMMIT' : 'XA ROLLBACK'} ${sqlXid(xid)}`);
            return;
          } catch (err) {
            if (mysqlErrno(err) !== ER_XAER_NOTA || Date.now() > giveUpAtMs) throw err;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      },
      describeError: describeMySqlError,
    };
    return await resolveByHand(store, { txnId, gid, outcome: o.outcome, operator: o.operator, reason: o.reason });
  } catch (err) {
    if (err instanceof HeuristicError) throw err;
    throw new HeuristicError(`MySQL at ${redact(o.url)}: ${describeMySqlError(err)}`);
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}
