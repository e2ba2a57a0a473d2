// The console shows an error as a sentence led by its gRPC code name, never
// grpc-js's raw text; a participant's own refusal keeps its words.
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { errorSentence, grpcErrorSentence } from '../../src/console/errors.ts';

describe('console error sentences', () => {
  it('turns grpc-js text into the code name and what it means for the callee', () => {
    const raw =
      '14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7001 (2026-12-05T19:00:00.000Z)';
    expect(errorSentence(raw, 'participant shop')).toEqual({
      code: 'UNAVAILABLE',
      sentence: 'UNAVAILABLE: participant shop did not answer (not running, unreachable, or refusing connections)',
    });
    expect(
      errorSentence('4 DEADLINE_EXCEEDED: Deadline exceeded after 10.001s,LB pick: 0.001s', 'participant shop')
        .sentence,
    ).toBe('DEADLINE_EXCEEDED: participant shop did not answer in time');
  });

  it("keeps a participant's own refusal in its words, after the code name", () => {
    expect(errorSentence('9 FAILED_PRECONDITION: the ledger is closed for the night', 'participant ledger')).toEqual({
      code: 'FAILED_PRECONDITION',
      sentence: 'FAILED_PRECONDITION: the ledger is closed for the night',
    });
  });

  it('keeps the words of a participant that answered UNAVAILABLE itself (its disk failed), unlike a call that got no answer', () => {
    expect(
      errorSentence('14 UNAVAILABLE: resource failed to commit t-1: the ledger disk is full', 'participant ledger')
        .sentence,
    ).toBe('UNAVAILABLE: resource failed to commit t-1: the ledger disk is full');
    expect(
      errorSentence('14 UNAVAILABLE: the connection to participant 127.0.0.1:7001 is closed', 'participant ledger')
        .sentence,
    ).toBe('UNAVAILABLE: participant ledger did not answer (not running, unreachable, or refusing connections)');
  });

  it('leaves text without a gRPC code as it is, on one line', () => {
    expect(errorSentence('something\n  else', 'x')).toEqual({ code: '', sentence: 'something else' });
    expect(errorSentence('99 NOT_A_CODE: x', 'x').code).toBe('');
  });

  it('reads a ServiceError by its code', () => {
    const e = Object.assign(new Error('14 UNAVAILABLE: No connection established'), {
      code: grpc.status.UNAVAILABLE,
      details: 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7002',
      metadata: new grpc.Metadata(),
    });
    expect(grpcErrorSentence(e, 'node n2')).toEqual({
      code: 'UNAVAILABLE',
      sentence: 'UNAVAILABLE: node n2 did not answer (not running, unreachable, or refusing connections)',
    });
  });
});
