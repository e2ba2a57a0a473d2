// `verdict participant --resource mysql` flags (parseParticipantArgs): the
// MySQL resource is chosen with its URL, and every mismatch is one line.
import { describe, expect, it } from 'vitest';
import { parseParticipantArgs } from '../../src/cli/participant.ts';

const base = ['--id', 'ledger', '--listen', '127.0.0.1:7102', '--data', '/tmp/x'];

describe('verdict participant --resource mysql flags', () => {
  it('selects the mysql resource with --mysql-url and --mysql-concurrency', () => {
    const a = parseParticipantArgs(
      [...base, '--resource', 'mysql', '--mysql-url', 'mysql://u:pw@h:3306/ledger', '--mysql-concurrency', '4'],
      {},
    );
    expect(a).toMatchObject({
      resource: 'mysql',
      mysqlUrl: 'mysql://u:pw@h:3306/ledger',
      mysqlConcurrency: 4,
      pgUrl: undefined,
    });
  });

  it('refuses incomplete or mismatched mysql flags with one line, the password hidden', () => {
    expect(() => parseParticipantArgs([...base, '--resource', 'mysql'], {})).toThrow(
      '--resource mysql needs --mysql-url mysql://USER:PASSWORD@HOST:PORT/DATABASE',
    );
    expect(() => parseParticipantArgs([...base, '--mysql-url', 'mysql://h/db'], {})).toThrow(
      '--mysql-url and --mysql-concurrency go with --resource mysql',
    );
    expect(() =>
      parseParticipantArgs(
        [...base, '--resource', 'mysql', '--mysql-url', 'mysql://h/db', '--pg-url', 'postgres://h/db'],
        {},
      ),
    ).toThrow('--pg-url and --pg-concurrency go with --resource postgres');
    expect(() =>
      parseParticipantArgs([...base, '--resource', 'mysql', '--mysql-url', 'mysql://u:secret@h:3306/'], {}),
    ).toThrow(
      '--mysql-url "mysql://u:***@h:3306/" must be mysql://USER:PASSWORD@HOST:PORT/DATABASE (with the database)',
    );
    expect(() =>
      parseParticipantArgs(
        [...base, '--resource', 'mysql', '--mysql-url', 'mysql://h/db', '--mysql-concurrency', '0'],
        {},
      ),
    ).toThrow(/--mysql-concurrency must be an integer from 1 to 1000/);
  });
});
