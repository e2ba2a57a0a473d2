// The start-up check of a MySQL/MariaDB server (assessServer, pure): every
// setting that would lose a prepared XA branch, or hide it from recovery, is
// refused with the setting, the value and the fix. Facts of servers the
// tests cannot start (MySQL 8, old versions) are written out here; the
// MariaDB tests in test/mysql/ check the same rules against a real server.
import { describe, expect, it } from 'vitest';
import { assessServer, type ServerFacts } from '../../src/participant/resources/mysql/server-check.ts';

const INNODB = { engine: 'InnoDB', xa: true, support: 'DEFAULT' };
const MYISAM = { engine: 'MyISAM', xa: false, support: 'YES' };

function facts(over: Partial<ServerFacts> & { vars?: Record<string, string> } = {}): ServerFacts {
  return {
    version: over.version ?? '10.11.19-MariaDB-0+deb12u1',
    variables: {
      innodb_flush_log_at_trx_commit: '1',
      log_bin: 'OFF',
      sync_binlog: '0',
      default_storage_engine: 'InnoDB',
      ...over.vars,
    },
    engines: over.engines ?? [INNODB, MYISAM],
    xaRecoverError: over.xaRecoverError ?? null,
    grants: over.grants ?? ['GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost`'],
  };
}

describe('MySQL server check', () => {
  it('accepts a durable MariaDB 10.11 and a durable MySQL 8 with XA_RECOVER_ADMIN', () => {
    expect(assessServer(facts()).refusals).toEqual([]);
    expect(
      assessServer(
        facts({
          version: '8.0.36',
          vars: { log_bin: 'ON', sync_binlog: '1' },
          grants: ['GRANT USAGE ON *.* TO `app`@`%`', 'GRANT XA_RECOVER_ADMIN ON *.* TO `app`@`%`'],
        }),
      ).refusals,
    ).toEqual([]);
  });

  it('refuses versions that roll a prepared branch back when its session ends (MySQL < 5.7.7, MariaDB < 10.5.2)', () => {
    expect(assessServer(facts({ version: '5.7.6-log' })).refusals.join()).toMatch(
      /MySQL 5\.7\.6-log rolls a prepared XA branch back when its session ends/,
    );
    expect(assessServer(facts({ version: '10.4.32-MariaDB' })).refusals.join()).toMatch(
      /MariaDB 10\.4\.32-MariaDB .*MDEV-742/,
    );
    expect(assessServer(facts({ version: '5.7.7' })).refusals).toEqual([]);
    expect(assessServer(facts({ version: '10.5.2-MariaDB' })).refusals).toEqual([]);
  });

  it('refuses a server without XA: no XA engine, a default engine without XA, innodb_support_xa = OFF', () => {
    expect(
      assessServer(facts({ engines: [MYISAM], vars: { default_storage_engine: 'MyISAM' } })).refusals.join(),
    ).toMatch(/no storage engine with XA support/);
    expect(assessServer(facts({ vars: { default_storage_engine: 'MyISAM' } })).refusals.join()).toMatch(
      /default_storage_engine = MyISAM, which has no XA support.*set default_storage_engine = InnoDB/,
    );
    expect(assessServer(facts({ version: '5.7.9', vars: { innodb_support_xa: 'OFF' } })).refusals.join()).toMatch(
      /innodb_support_xa = OFF/,
    );
  });

  it('refuses settings that lose an acknowledged XA PREPARE in a crash: innodb_flush_log_at_trx_commit != 1, binlog without sync_binlog = 1', () => {
    expect(assessServer(facts({ vars: { innodb_flush_log_at_trx_commit: '2' } })).refusals.join()).toMatch(
      /innodb_flush_log_at_trx_commit = 2: .*set innodb_flush_log_at_trx_commit = 1/,
    );
    expect(assessServer(facts({ vars: { innodb_flush_log_at_trx_commit: '0' } })).refusals).toHaveLength(1);
    expect(assessServer(facts({ vars: { log_bin: 'ON', sync_binlog: '0' } })).refusals.join()).toMatch(
      /binary log is on with sync_binlog = 0.*set sync_binlog = 1/,
    );
    expect(assessServer(facts({ vars: { log_bin: 'OFF', sync_binlog: '0' } })).refusals).toEqual([]);
  });

  it("refuses a MySQL 8 user without XA_RECOVER_ADMIN, and any user whose XA RECOVER fails, with the server's error", () => {
    const noAdmin = assessServer(
      facts({
        version: '8.0.36',
        grants: ['GRANT USAGE ON *.* TO `app`@`%`', 'GRANT ALL PRIVILEGES ON `shop`.* TO `app`@`%`'],
      }),
    );
    expect(noAdmin.refusals.join()).toMatch(
      /lacks the XA_RECOVER_ADMIN privilege.*GRANT XA_RECOVER_ADMIN ON \*\.\* TO <user>/,
    );
    const failed = assessServer(
      facts({
        version: '8.0.36',
        xaRecoverError:
          'MySQL error 1227 (ER_SPECIFIC_ACCESS_DENIED_ERROR, SQLSTATE 42000): Access denied; you need (at least one of) the XA_RECOVER_ADMIN privilege(s) for this operation',
      }),
    );
    expect(failed.refusals.join()).toMatch(
      /XA RECOVER fails for this user \(MySQL error 1227 .*\).*GRANT XA_RECOVER_ADMIN/,
    );
  });

  it('refuses a version string it cannot read rather than guess', () => {
    expect(assessServer(facts({ version: 'unknown' })).refusals.join()).toMatch(/not MAJOR\.MINOR\.PATCH/);
  });
});
