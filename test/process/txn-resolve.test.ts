// `verdict txn resolve` (a real CLI process) against a real one-node cluster:
// the operator's act on the cluster side, recorded in the log with who, when
// and why; COMMIT of an undecided transaction refused (AC2), a decision never
// reversed (R1), and the act shown by `txn show` and `txn list --heuristic`.
import { afterAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, runCli, useProcessCleanup } from './harness.ts';

useProcessCleanup();

let client: VerdictClient | null = null;
afterAll(() => client?.close());

describe('verdict txn resolve', () => {
  it('AC2 refuses --commit of an undecided transaction; --abort decides it with who/when/why; R1 refuses the contrary afterwards', async () => {
    const c = await Cluster.start({ nodes: 1 });
    const { node } = await c.waitForLeader();
    const ep = ['--endpoints', node.address];
    client = new VerdictClient({ insecure: true, endpoints: [node.address] });
    // Begun on the leader and never committed: undecided, no votes.
    await client.begin({ txnId: 'stuck-1', timeoutMs: 600_000 });

    const commit = await runCli(['txn', 'resolve', 'stuck-1', '--commit', '--reason', 'try', ...ep]);
    expect(commit.code).toBe(1);
    expect(commit.stderr).toMatch(/FAILED_PRECONDITION: COMMIT of undecided transaction stuck-1 refused/);
    expect(commit.stderr).toMatch(/AC2/);

    const noReason = await runCli(['txn', 'resolve', 'stuck-1', '--abort', ...ep]);
    expect(noReason.code).toBe(64);
    expect(noReason.stderr).toMatch(/--reason TEXT is required/);

    const abort = await runCli([
      'txn',
      'resolve',
      'stuck-1',
      '--abort',
      '--reason',
      'participant shop lost its disk',
      '--operator',
      'bob@ops',
      '--json',
      ...ep,
    ]);
    expect(abort.stderr).toBe('');
    expect(abort.code).toBe(0);
    expect(JSON.parse(abort.stdout)).toMatchObject({
      decided: true,
      operator: 'bob@ops',
      outcome: { outcome: 'ABORTED' },
    });
    expect((await client.outcome('stuck-1')).outcome).toBe('ABORTED');

    // Asking again for the same outcome confirms it and is recorded too; the contrary is refused (R1).
    const confirm = await runCli([
      'txn',
      'resolve',
      'stuck-1',
      '--abort',
      '--reason',
      'double-check',
      '--operator',
      'carol@ops',
      ...ep,
    ]);
    expect([confirm.code, confirm.stdout]).toEqual([
      0,
      expect.stringMatching(/already decided so; carol@ops's request is recorded/),
    ]);
    const reverse = await runCli(['txn', 'resolve', 'stuck-1', '--commit', '--reason', 'oops', ...ep]);
    expect(reverse.code).toBe(1);
    expect(reverse.stderr).toMatch(
      /is decided ABORT; COMMIT is refused: the cluster never reverses a decision \(R1\).*verdict participant resolve stuck-1 --commit/,
    );

    const shown = await runCli(['txn', 'show', 'stuck-1', '--json', ...ep]);
    expect(shown.code).toBe(0);
    const s = JSON.parse(shown.stdout) as {
      outcome: string;
      resolutions: { operator: string; reason: string; decided: boolean; outcome: string }[];
    };
    expect(s.outcome).toBe('ABORTED');
    expect(s.resolutions).toEqual([
      expect.objectContaining({
        operator: 'bob@ops',
        reason: 'participant shop lost its disk',
        decided: true,
        outcome: 'ABORTED',
      }),
      expect.objectContaining({ operator: 'carol@ops', decided: false }),
    ]);
    const listed = await runCli(['txn', 'list', '--heuristic', ...ep]);
    expect(listed.stdout).toMatch(/stuck-1 .*resolved-by:bob@ops,resolved-by:carol@ops/);
    const many = await runCli(['txn', 'list', '--heuristic', '--unacked', ...ep]);
    expect(many.code).toBe(64);
  }, 120_000);
});
