// The payload a database participant (PostgreSQL, MySQL) is enlisted with:
//
//   empty                   T's work was done in-process through work(T, ...).
//                           With no open transaction for T here (the work
//                           failed, expired, or this process restarted since)
//                           the vote is NO: preparing an empty transaction
//                           would commit T without its work.
//   {"sql": ["INSERT ...", ...]}
//                           UTF-8 JSON: statements run in order inside T's
//                           transaction at PREPARE time (after any work done
//                           through work()), for demos and tools with no
//                           application in-process. {"sql": []} prepares an
//                           intentionally empty transaction.
//
// Bytes from the wire: parsed strictly, every problem a reason for NO.

export const PG_PAYLOAD_STATEMENTS_MAX = 1_000;

export type ParsedPgPayload = { ok: true; sql: string[] | null } | { ok: false; reason: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Empty → null (work done in-process); {"sql": [...]} → the statements; anything else → a reason for NO. */
export function parsePgPayload(payload: Uint8Array): ParsedPgPayload {
  if (payload.byteLength === 0) return { ok: true, sql: null };
  let v: unknown;
  try {
    v = JSON.parse(utf8.decode(payload));
  } catch (err) {
    return {
      ok: false,
      reason: `payload is not UTF-8 JSON (${(err as Error).message}); expected {"sql": ["INSERT ...", ...]} or an empty payload`,
    };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { ok: false, reason: 'payload must be a JSON object like {"sql": ["INSERT ..."]}' };
  const obj = v as Record<string, unknown>;
  for (const k of Object.keys(obj))
    if (k !== 'sql') return { ok: false, reason: `payload has an unknown field "${k}"; allowed: sql` };
  const sql = obj.sql;
  if (!Array.isArray(sql) || !sql.every((s) => typeof s === 'string' && s.trim() !== ''))
    return { ok: false, reason: 'payload "sql" must be an array of non-empty SQL strings' };
  if (sql.length > PG_PAYLOAD_STATEMENTS_MAX)
    return { ok: false, reason: `payload has ${sql.length} statements; at most ${PG_PAYLOAD_STATEMENTS_MAX}` };
  return { ok: true, sql: sql as string[] };
}

/** Encodes a payload of SQL statements, for applications, demos and tests. */
export function pgPayload(sql: string[]): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ sql }));
}
