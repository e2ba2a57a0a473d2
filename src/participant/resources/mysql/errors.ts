// How MySQL's errors read in votes, refusals and log lines: the
// server's own error number, name, SQLSTATE and message, so an operator can
// look them up; a lost connection says so.

interface MySqlErrorShape {
  message?: string;
  code?: string;
  errno?: number;
  sqlState?: string;
  sqlMessage?: string;
  fatal?: boolean;
}

/**
 * "MySQL error 1397 (ER_XAER_NOTA, SQLSTATE XAE04): XAER_NOTA: Unknown XID",
 * or a lost connection with its code. The driver names errors by MySQL's
 * table; MySQL and MariaDB numbers part ways from 3000 on, so the name is
 * given below that only, and the number and message always.
 */
export function describeMySqlError(err: unknown): string {
  const e = (typeof err === 'object' && err !== null ? err : { message: String(err) }) as MySqlErrorShape;
  if (typeof e.errno === 'number' && e.sqlMessage !== undefined) {
    const name = e.errno < 3000 && e.code !== undefined ? `${e.code}, ` : '';
    return `MySQL error ${e.errno} (${name}SQLSTATE ${e.sqlState ?? '?????'}): ${e.sqlMessage}`;
  }
  const message = e.message ?? String(err);
  if (e.fatal === true || (typeof e.code === 'string' && /^(PROTOCOL_|E[A-Z]+$)/.test(e.code)))
    return `lost connection to MySQL: ${e.code ?? 'fatal'}: ${message}`;
  return message;
}

/** The server's error number, when err is one. */
export function mysqlErrno(err: unknown): number | undefined {
  const n = (err as MySqlErrorShape | null)?.errno;
  return typeof n === 'number' ? n : undefined;
}

/** XAER_NOTA: the xid is not (or no longer) prepared. */
export const ER_XAER_NOTA = 1397;
/** The table does not exist. */
export const ER_NO_SUCH_TABLE = 1146;

/** One URL redaction for every database: the password becomes ***. */
export { redact } from '../../db-url.ts';
