// `verdict participant --lock-wait-ms` (parseParticipantArgs): how long a
// memory PREPARE waits for a locked key; refused with one line elsewhere.
import { describe, expect, it } from 'vitest';
import { parseParticipantArgs } from '../../src/cli/participant.ts';

const base = ['--id', 'p1', '--listen', '127.0.0.1:7101', '--data', '/tmp/x'];

describe('verdict participant --lock-wait-ms', () => {
  it('is the runtime default when absent and the given integer otherwise, 0 included', () => {
    expect(parseParticipantArgs(base, {}).lockWaitMs).toBeUndefined();
    expect(parseParticipantArgs([...base, '--lock-wait-ms', '250'], {}).lockWaitMs).toBe(250);
    expect(parseParticipantArgs([...base, '--lock-wait-ms', '0'], {}).lockWaitMs).toBe(0);
  });

  it('refuses a value that is not an integer from 0 to 60000, and any other resource', () => {
    for (const bad of ['-1', '1.5', 'soon', '60001']) {
      expect(() => parseParticipantArgs([...base, '--lock-wait-ms', bad], {})).toThrow(
        `--lock-wait-ms must be an integer from 0 to 60000, not "${bad}"`,
      );
    }
    expect(() =>
      parseParticipantArgs(
        [...base, '--resource', 'postgres', '--pg-url', 'postgres://u@h/db', '--lock-wait-ms', '5'],
        {},
      ),
    ).toThrow('--lock-wait-ms goes with --resource memory (a database waits on its own locks)');
  });
});
