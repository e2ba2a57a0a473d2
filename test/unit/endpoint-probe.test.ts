// What a registrant learns of the addresses it points the leader at
// (src/node/participant-link.ts noVoteError, src/node/endpoint-changes.ts):
// nothing of the connection, and at most ENDPOINT_CHANGES_MAX new endpoints
// per participant per minute.
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_CHANGE_WINDOW_MS, ENDPOINT_CHANGES_MAX, EndpointChanges } from '../../src/node/endpoint-changes.ts';
import { noVoteError } from '../../src/node/participant-link.ts';
import { serviceError } from '../../src/transport/request-stream.ts';

const probe = { id: 'probe', endpoint: '10.0.0.5:22', registeredAtMs: 0, resourceKind: 'memory', serves: [] };

describe('a PREPARE without a vote tells the abort reason nothing of the connection', () => {
  it('refused, timed out, not gRPC, another gRPC service: one and the same reason', () => {
    const failures = [
      serviceError(grpc.status.UNAVAILABLE, 'No connection established. Last error: connect ECONNREFUSED 10.0.0.5:22'),
      serviceError(grpc.status.DEADLINE_EXCEEDED, 'Deadline exceeded after 10.001s'),
      serviceError(
        grpc.status.INTERNAL,
        'Received RST_STREAM with code 2 triggered by internal client error: Protocol error',
      ),
      serviceError(grpc.status.UNIMPLEMENTED, 'unknown service verdict.participant.Participant'),
      new Error('participant probe answered PREPARE without a vote'),
    ];
    const reasons = new Set(failures.map((e) => noVoteError(probe, e).message));
    expect([...reasons]).toEqual([
      "no answer from participant probe at its registered endpoint (unreachable, not a participant, or too slow; the leader's log names the error)",
    ]);
  });

  it("a participant's own refusal keeps its words", () => {
    const own = serviceError(
      grpc.status.FAILED_PRECONDITION,
      'PREPARE for cluster "a", this participant belongs to "b"',
    );
    expect(noVoteError(probe, own)).toBe(own);
  });
});

describe('new endpoints per participant id', () => {
  it(`at most ${ENDPOINT_CHANGES_MAX} per window, per id; the window slides`, () => {
    const c = new EndpointChanges();
    for (let i = 0; i < ENDPOINT_CHANGES_MAX; i++) expect(c.allow('probe', 1_000 + i)).toBe(true);
    expect(c.allow('probe', 2_000)).toBe(false);
    // Another id has its own count.
    expect(c.allow('shop', 2_000)).toBe(true);
    // A refused attempt is not counted: once the first changes leave the window, changes are allowed again.
    expect(c.allow('probe', 1_000 + ENDPOINT_CHANGE_WINDOW_MS)).toBe(true);
    expect(c.allow('probe', 1_000 + ENDPOINT_CHANGE_WINDOW_MS)).toBe(false);
  });
});
