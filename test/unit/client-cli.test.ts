// `verdict txn ...` and `verdict participants` against a fake Coordinator:
// output, exit codes scripts rely on, and usage errors.
import * as grpc from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../../src/cli/args.ts';
import { useTimeout } from '../../src/cli/reach.ts';
import { EXIT_ABORTED, EXIT_ERROR, EXIT_OUTCOME_UNKNOWN, participantsCommand, txnCommand } from '../../src/cli/txn.ts';
import { FakeCluster, fail, type FakeNode } from './fixtures/client-fake-coordinator.ts';

const cluster = new FakeCluster();
let out: string[];
let err: string[];

beforeEach(() => {
  out = [];
  err = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => out.push(String(s)) > 0);
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => err.push(String(s)) > 0);
  process.exitCode = undefined;
});

afterEach(() => {
  useTimeout(undefined);
  vi.restoreAllMocks();
  process.exitCode = undefined;
  cluster.close();
});

async function coordinator(commitOutcome: 'OUTCOME_COMMITTED' | 'OUTCOME_ABORTED'): Promise<FakeNode> {
  return cluster.node({
    Begin: (req) => ({ txnId: req.txnId, deadlineAtMs: 0, leaderId: 'n1' }),
    Commit: (req) => ({
      txnId: req.txnId,
      outcome: commitOutcome,
      reason: commitOutcome === 'OUTCOME_ABORTED' ? 'ledger voted NO' : '',
      decisionIndex: 12,
    }),
    GetOutcome: () => fail(grpc.status.UNAVAILABLE, 'no leader'),
    ListParticipants: () => ({
      participants: [
        {
          participantId: 'shop',
          endpoint: '127.0.0.1:9001',
          registeredAtMs: 0,
          lastSeenAtMs: 0,
          inDoubt: 0,
          connection: '',
          resourceKind: 'postgres',
          serves: [],
        },
      ],
    }),
    ListTransactions: () => ({
      transactions: [
        {
          txnId: 't1',
          outcome: 'OUTCOME_IN_PROGRESS' as const,
          reason: '',
          phase: 'preparing',
          ageMs: 1_500,
          decisionIndex: 0,
          participants: [{ participantId: 'shop', vote: 'yes', acked: false, retries: 0, unimplemented: '' }],
          heuristics: [],
          resolutions: [],
          removals: [],
        },
      ],
    }),
  });
}

describe('verdict txn', () => {
  it('commit sends the participants and their JSON payloads under --txn and prints COMMITTED with exit code 0', async () => {
    const node = await coordinator('OUTCOME_COMMITTED');
    await txnCommand([
      'commit',
      '--endpoints',
      node.address,
      '--participant',
      'shop={"sku":"A"}',
      '--participant',
      'ledger',
      '--txn',
      'o-1',
      '--txn-timeout-ms',
      '800',
    ]);
    expect(out.join('')).toBe('COMMITTED o-1 at decision index 12\n');
    expect(process.exitCode).toBeUndefined();
    const q = node.requests('Commit')[0];
    expect(q.txnId).toBe('o-1');
    expect(q.participants.map((p) => [p.participantId, Buffer.from(p.payload).toString()])).toEqual([
      ['shop', '{"sku":"A"}'],
      ['ledger', ''],
    ]);
    expect(node.requests('Begin')[0].timeoutMs).toBe(800);
  });

  it('commit that ends ABORTED exits with EXIT_ABORTED and prints the reason (JSON with --json)', async () => {
    const node = await coordinator('OUTCOME_ABORTED');
    await txnCommand(['commit', '--endpoints', node.address, '--participant', 'ledger', '--txn', 'o-2', '--json']);
    expect(JSON.parse(out.join(''))).toEqual({
      txnId: 'o-2',
      outcome: 'ABORTED',
      reason: 'ledger voted NO',
      decisionIndex: 12,
    });
    expect(process.exitCode).toBe(EXIT_ABORTED);
  });

  it('a payload that is not JSON, or no participant, is a usage error before any RPC', async () => {
    const node = await coordinator('OUTCOME_COMMITTED');
    await expect(
      txnCommand(['commit', '--endpoints', node.address, '--participant', 'shop={oops']),
    ).rejects.toBeInstanceOf(UsageError);
    await expect(txnCommand(['commit', '--endpoints', node.address])).rejects.toBeInstanceOf(UsageError);
    expect(node.count('Begin')).toBe(0);
  });

  it('outcome with no node answering prints one line and exits with EXIT_ERROR, no stack trace', async () => {
    const node = await coordinator('OUTCOME_COMMITTED');
    useTimeout(200);
    await txnCommand(['outcome', 't9', '--endpoints', node.address]);
    expect(process.exitCode).toBe(EXIT_ERROR);
    expect(err.join('')).toMatch(/^verdict: UNAVAILABLE: no node answered GetOutcome in time; last: .* no leader\n$/);
  });

  it('commit with no answer exits with EXIT_OUTCOME_UNKNOWN and tells how to ask later', async () => {
    const node = await cluster.node({
      Begin: (req) => ({ txnId: req.txnId, deadlineAtMs: 0, leaderId: 'n1' }),
      Commit: () => fail(grpc.status.UNAVAILABLE, 'no leader'),
    });
    useTimeout(200);
    await txnCommand(['commit', '--participant', 'p', '--txn', 'o-3', '--endpoints', node.address]);
    expect(process.exitCode).toBe(EXIT_OUTCOME_UNKNOWN);
    expect(err.join('')).toMatch(/run: verdict txn outcome o-3\n$/);
    expect(out.join('')).toBe('');
  });

  it('show of a presumed abort marks its participants\' ACK "not needed" (aborts need none, R5), not "no"', async () => {
    const node = await cluster.node({
      GetOutcome: (req) => ({
        txnId: req.txnId,
        outcome: 'OUTCOME_ABORTED' as const,
        reason: 'ledger voted NO',
        decisionIndex: 0,
      }),
      ListTransactions: () => ({
        transactions: [
          {
            txnId: 'a1',
            outcome: 'OUTCOME_ABORTED' as const,
            reason: 'ledger voted NO',
            phase: 'aborted',
            ageMs: 3_000,
            decisionIndex: 0,
            participants: [{ participantId: 'shop', vote: 'yes', acked: false, retries: 0, unimplemented: '' }],
            heuristics: [],
            resolutions: [],
            removals: [],
          },
        ],
      }),
    });
    await txnCommand(['show', 'a1', '--endpoints', node.address]);
    expect(out.join('')).toMatch(/^shop +yes +not needed +0$/m);
    expect(process.exitCode).toBeUndefined();
  });

  it('outcome of an id the cluster does not know exits with EXIT_ERROR, like show', async () => {
    const node = await cluster.node({
      GetOutcome: (req) => ({ txnId: req.txnId, outcome: 'OUTCOME_UNKNOWN' as const, reason: '', decisionIndex: 0 }),
    });
    await txnCommand(['outcome', 'nope', '--endpoints', node.address]);
    expect(out.join('')).toBe('UNKNOWN nope: never heard of, or forgotten after every participant acknowledged it\n');
    expect(process.exitCode).toBe(EXIT_ERROR);
  });

  it('list prints a table of transactions with votes; participants prints JSON with --json', async () => {
    const node = await coordinator('OUTCOME_COMMITTED');
    await txnCommand(['list', '--in-flight', '--endpoints', node.address]);
    const lines = out.join('').trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TXN\s+OUTCOME\s+PHASE\s+AGE/);
    expect(lines[1]).toMatch(/^t1\s+IN_PROGRESS\s+preparing\s+1\.5s\s+shop:yes$/);
    expect(node.requests('ListTransactions')[0].inFlight).toBe(true);
    out.length = 0;
    await participantsCommand(['--json', '--endpoints', node.address]);
    expect(JSON.parse(out.join(''))).toEqual([
      {
        participantId: 'shop',
        endpoint: '127.0.0.1:9001',
        registeredAtMs: 0,
        lastSeenAtMs: 0,
        inDoubt: 0,
        connection: '',
        resourceKind: 'postgres',
        serves: [],
      },
    ]);
    out.length = 0;
    await participantsCommand(['--endpoints', node.address]);
    const table = out.join('').trimEnd().split('\n');
    expect(table[0]).toMatch(/^PARTICIPANT\s+KIND\s+ENDPOINT/);
    expect(table[1]).toMatch(/^shop\s+postgres\s+127\.0\.0\.1:9001\s/);
    // Registered without serves: nothing optional, so its transactions commit the classic way.
    expect(table[0]).toMatch(/\sSERVES$/);
    expect(table[1]).toMatch(/\s-$/);
  });
});
