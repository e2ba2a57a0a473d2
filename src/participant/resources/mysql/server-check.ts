// The start-up check of a MySQL or MariaDB server: whether a branch this
// adapter prepares there survives what R4 says it must (the participant's
// crash, the server's crash, the session's end), and whether this user may
// list prepared branches. gatherFacts() asks the server; assessServer() is
// pure and decides, so every rule is unit-tested against facts of servers
// the tests cannot start (MySQL 8, old versions).
//
//   version            MySQL before 5.7.7 and MariaDB before 10.5.2 roll a
//                      prepared XA branch back when its session ends (and
//                      cannot XA COMMIT it from another connection), so a
//                      crash of this process would decide alone: refused.
//   XA support         the default storage engine must support XA
//                      (information_schema.ENGINES.XA = 'YES', i.e. InnoDB):
//                      tables created without ENGINE= would otherwise commit
//                      outside the branch. innodb_support_xa = OFF (MySQL
//                      5.7 before 5.7.10) turns two-phase commit off: refused.
//   durability         innodb_flush_log_at_trx_commit must be 1 (0 and 2 let
//                      an acknowledged XA PREPARE vanish in a crash); with
//                      the binary log on, sync_binlog must be 1 (the binlog
//                      is the XA coordinator at recovery: an unsynced
//                      prepare is rolled back).
//   XA RECOVER         must work for this user; on MySQL 8 it needs the
//                      XA_RECOVER_ADMIN privilege (checked in SHOW GRANTS too:
//                      a refused XA RECOVER is not an error on every version).
//
// A refusal names the setting, the value found, the fix, and for an error
// the server's own code and message.
import type { Pool } from 'mysql2/promise';
import { describeMySqlError } from './errors.ts';

export interface ServerFacts {
  /** SELECT VERSION(), e.g. "10.11.19-MariaDB-0+deb12u1" or "8.0.36". */
  version: string;
  /** Global variables by lower-case name; absent when the server has no such variable. */
  variables: Record<string, string>;
  /** Storage engines and whether each supports XA (information_schema.ENGINES). */
  engines: { engine: string; xa: boolean; support: string }[];
  /** Why XA RECOVER failed for this user, or null when it worked. */
  xaRecoverError: string | null;
  /** SHOW GRANTS (for CURRENT_USER), one line each; empty when the server would not say. */
  grants: string[];
}

export interface Assessment {
  refusals: string[];
  warnings: string[];
}

/** Variables that decide whether a prepared branch survives a crash. */
export const CHECKED_VARIABLES = [
  'innodb_flush_log_at_trx_commit',
  'log_bin',
  'sync_binlog',
  'innodb_support_xa',
  'default_storage_engine',
] as const;

/** Asks the server for the facts assessServer() needs: a few short statements on one control connection. */
export async function gatherFacts(pool: Pool): Promise<ServerFacts> {
  const [vrows] = (await pool.query('SELECT VERSION() AS v')) as unknown as [{ v: string }[]];
  const [rows] = (await pool.query(
    `SHOW GLOBAL VARIABLES WHERE Variable_name IN (${CHECKED_VARIABLES.map((v) => `'${v}'`).join(', ')})`,
  )) as unknown as [{ Variable_name: string; Value: string }[]];
  const variables: Record<string, string> = {};
  for (const r of rows) variables[r.Variable_name.toLowerCase()] = String(r.Value);
  const [erows] = (await pool.query(
    'SELECT ENGINE AS engine, SUPPORT AS support, XA AS xa FROM information_schema.ENGINES',
  )) as unknown as [{ engine: string; support: string; xa: string | null }[]];
  let xaRecoverError: string | null = null;
  try {
    await pool.query('XA RECOVER');
  } catch (err) {
    xaRecoverError = describeMySqlError(err);
  }
  let grants: string[] = [];
  try {
    const [grows] = (await pool.query('SHOW GRANTS')) as unknown as [Record<string, string>[]];
    grants = grows.map((g) => String(Object.values(g)[0] ?? ''));
  } catch {
    // Not needed on every server; the XA RECOVER probe above is what counts.
  }
  return {
    version: String(vrows[0]?.v ?? ''),
    variables,
    engines: erows.map((e) => ({ engine: e.engine, support: e.support, xa: e.xa === 'YES' })),
    xaRecoverError,
    grants,
  };
}

export interface ServerVersion {
  flavor: 'MariaDB' | 'MySQL';
  major: number;
  minor: number;
  patch: number;
}

export function parseVersion(version: string): ServerVersion | null {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (m === null) return null;
  return {
    flavor: /mariadb/i.test(version) ? 'MariaDB' : 'MySQL',
    major: Number(m[1]),
    minor: Number(m[2]),
    patch: Number(m[3]),
  };
}

const atLeast = (v: ServerVersion, major: number, minor: number, patch: number): boolean =>
  v.major !== major ? v.major > major : v.minor !== minor ? v.minor > minor : v.patch >= patch;

/** Pure: the reasons to refuse this server (empty: safe) and the warnings. */
export function assessServer(f: ServerFacts): Assessment {
  const refusals: string[] = [];
  const warnings: string[] = [];
  const v = parseVersion(f.version);
  if (v === null) {
    refusals.push(
      `the server's version "${f.version}" is not MAJOR.MINOR.PATCH; cannot tell whether its prepared XA branches survive a disconnect`,
    );
  } else if (v.flavor === 'MariaDB' && !atLeast(v, 10, 5, 2)) {
    refusals.push(
      `MariaDB ${f.version} rolls a prepared XA branch back when its session ends (MDEV-742, fixed in 10.5.2), so a crash of this participant would decide alone; upgrade to MariaDB 10.5.2 or later`,
    );
  } else if (v.flavor === 'MySQL' && !atLeast(v, 5, 7, 7)) {
    refusals.push(
      `MySQL ${f.version} rolls a prepared XA branch back when its session ends (fixed in 5.7.7), so a crash of this participant would decide alone; upgrade to MySQL 5.7.7 or later`,
    );
  }
  const vars = f.variables;
  if (vars.innodb_support_xa !== undefined && !isOn(vars.innodb_support_xa)) {
    refusals.push(
      `innodb_support_xa = ${vars.innodb_support_xa}: InnoDB does not take part in XA two-phase commit; set innodb_support_xa = ON`,
    );
  }
  const xaEngines = f.engines.filter((e) => e.xa && (e.support === 'YES' || e.support === 'DEFAULT'));
  if (xaEngines.length === 0) {
    refusals.push(
      'the server has no storage engine with XA support (information_schema.ENGINES.XA is NO for every engine): it cannot prepare a transaction; enable InnoDB',
    );
  } else {
    const dflt = vars.default_storage_engine;
    if (dflt !== undefined && !xaEngines.some((e) => e.engine.toLowerCase() === dflt.toLowerCase())) {
      refusals.push(
        `default_storage_engine = ${dflt}, which has no XA support: tables created without ENGINE= would commit outside the XA branch; set default_storage_engine = ${xaEngines[0].engine} (XA-capable engines here: ${xaEngines.map((e) => e.engine).join(', ')})`,
      );
    }
  }
  const flush = vars.innodb_flush_log_at_trx_commit;
  if (flush !== undefined && flush !== '1') {
    refusals.push(
      `innodb_flush_log_at_trx_commit = ${flush}: an acknowledged XA PREPARE may be lost in a crash (R4 needs it on disk before the vote); set innodb_flush_log_at_trx_commit = 1`,
    );
  }
  if (vars.log_bin !== undefined && isOn(vars.log_bin) && vars.sync_binlog !== '1') {
    refusals.push(
      `the binary log is on with sync_binlog = ${vars.sync_binlog ?? '(unknown)'}: the binlog decides which prepared branches survive a crash, and an unsynced one is rolled back; set sync_binlog = 1 (or turn the binary log off)`,
    );
  }
  // MySQL 8.0.14+ lists prepared branches only to holders of XA_RECOVER_ADMIN (granted directly or by ALL on *.*).
  if (
    f.xaRecoverError === null &&
    v?.flavor === 'MySQL' &&
    atLeast(v, 8, 0, 14) &&
    f.grants.length > 0 &&
    !f.grants.some((g) => /XA_RECOVER_ADMIN|ALL PRIVILEGES ON \*\.\*/i.test(g))
  ) {
    refusals.push(
      'this user lacks the XA_RECOVER_ADMIN privilege (SHOW GRANTS), so XA RECOVER cannot list its prepared branches after a crash; GRANT XA_RECOVER_ADMIN ON *.* TO <user>',
    );
  }
  if (f.xaRecoverError !== null) {
    const hint =
      v?.flavor === 'MySQL' && v.major >= 8 ? '; on MySQL 8 grant it with GRANT XA_RECOVER_ADMIN ON *.* TO <user>' : '';
    refusals.push(
      `XA RECOVER fails for this user (${f.xaRecoverError}): the participant could not find its prepared branches after a crash${hint}`,
    );
  }
  return { refusals, warnings };
}

function isOn(value: string): boolean {
  return /^(on|1|yes|true)$/i.test(value.trim());
}
