// Hostile node-to-node traffic for test/process/fuzz-raft.test.ts: a client
// of a node's `verdict.raft.Raft` service that writes any frame (encoded
// batches, or raw bytes), and a seeded generator of random, truncated,
// mistyped and forged batches. Every forged batch is wrong in at least one
// field, so a node that delivers any of it to its core has a hole.

import * as grpc from '@grpc/grpc-js';
import { encodeDecisionBatch } from '../../src/commit/decision-batch.ts';
import { encodeCommand } from '../../src/commit/state.ts';
import { Rng } from '../../src/raft/rng.ts';
import { EntryType, MessageType as MT } from '../../src/raft/types.ts';
import {
  raftNodeService,
  streamMethod,
  type WireBatch,
  type WireMessage,
  type WireStreamAck,
} from '../../src/transport/proto.ts';

/** uint64 values the encoder takes as decimal strings: 2^64 - 1 and 2^53. */
const U64_MAX = '18446744073709551615';
const TWO_53 = '9007199254740992';

export interface StreamResult {
  code: grpc.status;
  details: string;
}

/**
 * Opens one Raft stream to `address`, writes `frames` (a Buffer goes out as
 * is, anything else through the real encoder), ends it and resolves with the
 * node's status. Bounded by `callTimeoutMs`.
 */
export function sendFrames(
  client: grpc.Client,
  frames: (WireBatch | Buffer)[],
  callTimeoutMs = 10_000,
): Promise<StreamResult> {
  return new Promise((resolve) => {
    const serialize = (f: WireBatch | Buffer): Buffer => (Buffer.isBuffer(f) ? f : streamMethod.requestSerialize(f));
    const call = client.makeClientStreamRequest<WireBatch | Buffer, WireStreamAck>(
      streamMethod.path,
      serialize,
      streamMethod.responseDeserialize,
      { deadline: Date.now() + callTimeoutMs },
      (err) => resolve({ code: err?.code ?? grpc.status.OK, details: err?.details ?? '' }),
    );
    call.on('error', () => {});
    for (const f of frames) call.write(f);
    call.end();
  });
}

export function encodeBatch(b: WireBatch): Buffer {
  return streamMethod.requestSerialize(b);
}

/** Where the target node stands, so a forgery can aim at the spot where it would be taken. */
export interface Target {
  clusterId: string;
  nodeId: string;
  leaderId: string;
  /** A member other than the target, which forgeries claim to be. */
  memberId: string;
  term: number;
  lastIndex: number;
}

const base = (t: Target, type: MT, fields: Partial<WireMessage> = {}): WireMessage => ({
  type,
  from: t.memberId,
  to: t.nodeId,
  term: t.term,
  logTerm: 0,
  index: 0,
  entries: [],
  commit: 0,
  reject: false,
  rejectHint: 0,
  context: new Uint8Array(0),
  snapshot: null,
  ...fields,
});

export const batchOf = (t: Target, messages: WireMessage[], fields: Partial<WireBatch> = {}): WireBatch => ({
  clusterId: t.clusterId,
  from: t.memberId,
  to: t.nodeId,
  messages,
  ...fields,
});

/** An append that would land right after the target's log, at its term, and commit what it carries. */
export function appendAt(t: Target, entries: { type?: number; data: Uint8Array }[]): WireMessage {
  return base(t, MT.App, {
    from: t.memberId,
    index: t.lastIndex,
    logTerm: t.term,
    commit: t.lastIndex + entries.length,
    entries: entries.map((e, i) => ({
      term: t.term,
      index: t.lastIndex + 1 + i,
      type: e.type ?? EntryType.Normal,
      data: e.data,
    })),
  });
}

/** The three attacks of the report, as batches for `t`. */
export function reportedAttacks(t: Target): { name: string; batch: WireBatch }[] {
  return [
    {
      name: 'a heartbeat with term 2^53-1 from an id that is not a member',
      batch: batchOf(t, [base(t, MT.Heartbeat, { from: 'intruder', term: Number.MAX_SAFE_INTEGER, commit: 1 })], {
        from: 'intruder',
      }),
    },
    {
      name: 'a heartbeat with term 2^53-1 from a member',
      batch: batchOf(t, [base(t, MT.Heartbeat, { term: Number.MAX_SAFE_INTEGER })]),
    },
    { name: 'MSG_SNAP without a snapshot', batch: batchOf(t, [base(t, MT.Snap, { term: t.term + 1 })]) },
    {
      name: 'MSG_APP with an entry whose command tag is 127',
      batch: batchOf(t, [appendAt({ ...t, memberId: t.leaderId }, [{ data: new Uint8Array([127, 0x7b, 0x7d]) }])], {
        from: t.leaderId,
      }),
    },
  ];
}

function bytes(rng: Rng, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = rng.int(256);
  return b;
}

/** One forged message: a plausible one with one field (or two) made wrong. */
function forgedMessage(rng: Rng, t: Target): { batch: WireBatch; wrong: string } {
  const good = appendAt({ ...t, memberId: t.leaderId }, [{ data: encodeDecisionBatch([{ t: 'forget', txnIds: [] }]) }]);
  const lead = { ...t, memberId: t.leaderId };
  const pick: [string, () => WireBatch][] = [
    ['term 2^64-1', () => batchOf(t, [base(t, MT.Vote, { term: U64_MAX as unknown as number })])],
    ['term 2^53', () => batchOf(t, [base(t, MT.Heartbeat, { term: TWO_53 as unknown as number })])],
    ['term 0', () => batchOf(lead, [{ ...good, term: 0 }])],
    ['term far ahead', () => batchOf(t, [base(t, MT.PreVote, { term: t.term + 2 ** 40 })])],
    // (A negative number is no forgery here: the encoder writes it as 0.)
    ['commit 2^64-1', () => batchOf(t, [base(t, MT.Heartbeat, { commit: U64_MAX as unknown as number })])],
    ['index 2^64-1', () => batchOf(t, [base(t, MT.AppResp, { index: U64_MAX as unknown as number })])],
    ['unknown type', () => batchOf(t, [base(t, 40 + rng.int(1000))])],
    [
      'local type',
      () =>
        batchOf(t, [base(t, [MT.Hup, MT.Beat, MT.Unreachable, MT.SnapStatus, MT.CheckQuorum, MT.Prop][rng.int(6)])]),
    ],
    [
      'non-member sender',
      () => batchOf(t, [base(t, MT.Heartbeat, { from: `n${10 + rng.int(90)}` })], { from: `n${10 + rng.int(90)}` }),
    ],
    ['sender of 100 kB', () => batchOf(t, [base(t, MT.Heartbeat)], { from: 'x'.repeat(100_000) })],
    [
      'message from another member than the batch',
      () => batchOf(t, [base(t, MT.Heartbeat, { from: t.leaderId === t.memberId ? t.nodeId : t.leaderId })]),
    ],
    ['another cluster', () => batchOf(t, [base(t, MT.Heartbeat)], { clusterId: 'not-this-cluster' })],
    ['another destination', () => batchOf(t, [base(t, MT.Heartbeat, { to: 'n99' })], { to: 'n99' })],
    ['message for another node', () => batchOf(t, [base(t, MT.Heartbeat, { to: 'n99' })])],
    [
      'entries out of order',
      () => batchOf(lead, [{ ...good, entries: good.entries.map((e) => ({ ...e, index: e.index + 1 })) }]),
    ],
    [
      'entry term beyond the leader',
      () => batchOf(lead, [{ ...good, entries: good.entries.map((e) => ({ ...e, term: t.term + 1 })) }]),
    ],
    [
      'unknown entry type',
      () => batchOf(lead, [{ ...good, entries: good.entries.map((e) => ({ ...e, type: 2 + rng.int(100) })) }]),
    ],
    ['random entry payload', () => batchOf(lead, [appendAt(lead, [{ data: bytes(rng, 1 + rng.int(64)) }])])],
    [
      'unknown command tag',
      () => batchOf(lead, [appendAt(lead, [{ data: new Uint8Array([3 + rng.int(250), 1, 2]) }])]),
    ],
    [
      'command that is not JSON',
      () =>
        batchOf(lead, [appendAt(lead, [{ data: Buffer.concat([Buffer.from([2]), Buffer.from('{"t":"decide",')]) }])]),
    ],
    [
      'command of an unknown kind',
      () => batchOf(lead, [appendAt(lead, [{ data: encodeCommand({ t: 'drop-table' } as never) }])]),
    ],
    [
      'membership change that does not decode',
      () => batchOf(lead, [appendAt(lead, [{ type: EntryType.ConfChange, data: bytes(rng, 16) }])]),
    ],
    ['entries on a heartbeat', () => batchOf(lead, [base(lead, MT.Heartbeat, { entries: good.entries })])],
    [
      'snapshot without metadata',
      () => batchOf(lead, [base(lead, MT.Snap, { snapshot: { metadata: null, data: new Uint8Array(0) } })]),
    ],
    [
      'snapshot without voters',
      () =>
        batchOf(lead, [
          base(lead, MT.Snap, {
            snapshot: {
              metadata: {
                index: t.lastIndex + 100,
                term: t.term,
                confState: { voters: [], learners: [], votersOutgoing: [] },
              },
              data: new Uint8Array(0),
            },
          }),
        ]),
    ],
    [
      'snapshot with garbage data',
      () =>
        batchOf(lead, [
          base(lead, MT.Snap, {
            snapshot: {
              metadata: {
                index: t.lastIndex + 100,
                term: t.term,
                confState: { voters: [t.nodeId, t.leaderId, t.memberId], learners: [], votersOutgoing: [] },
              },
              data: bytes(rng, 64),
            },
          }),
        ]),
    ],
    ['context of 64 kB', () => batchOf(t, [base(t, MT.HeartbeatResp, { context: new Uint8Array(64 * 1024) })])],
    [
      'too many messages',
      () =>
        batchOf(
          t,
          Array.from({ length: 9_000 }, () => base(t, MT.HeartbeatResp, { term: 0 })),
        ),
    ],
  ];
  const [wrong, make] = pick[rng.int(pick.length)];
  return { batch: make(), wrong };
}

export type FuzzKind = 'random' | 'truncated' | 'mistyped' | 'forged';

export interface FuzzCase {
  kind: FuzzKind;
  what: string;
  frame: WireBatch | Buffer;
}

/** `count` seeded cases aimed at `t`, cycling through the four kinds. */
export function fuzzCases(seed: number, count: number, t: Target): FuzzCase[] {
  const rng = new Rng(seed);
  const out: FuzzCase[] = [];
  for (let i = 0; i < count; i++) {
    const kind = (['random', 'truncated', 'mistyped', 'forged'] as const)[i % 4];
    if (kind === 'random') {
      out.push({ kind, what: 'random bytes', frame: Buffer.from(bytes(rng, 1 + rng.int(512))) });
    } else if (kind === 'truncated') {
      const { batch, wrong } = forgedMessage(rng, t);
      const whole = rng.chance(0.5)
        ? encodeBatch(
            batchOf({ ...t, memberId: t.leaderId }, [
              appendAt({ ...t, memberId: t.leaderId }, [
                { data: encodeDecisionBatch([{ t: 'forget', txnIds: ['x'] }]) },
              ]),
            ]),
          )
        : encodeBatch(batch);
      out.push({
        kind,
        what: `truncated (${wrong})`,
        frame: whole.subarray(0, 1 + rng.int(Math.max(1, whole.byteLength - 1))),
      });
    } else if (kind === 'mistyped') {
      // Other messages of the same package, sent where a Batch is expected: the field numbers mean something else.
      const status = {
        clusterId: t.clusterId,
        nodeId: t.memberId,
        address: t.nodeId,
        role: 'leader',
        term: t.term,
        leaderId: t.leaderId,
        commitIndex: 1,
        appliedIndex: 1,
        lastIndex: 1,
        firstIndex: 1,
        peers: [],
      };
      const frames = [
        raftNodeService.Status.responseSerialize(status),
        raftNodeService.Put.requestSerialize({ key: 'k', value: bytes(rng, 32) }),
      ];
      out.push({ kind, what: 'another message type', frame: frames[rng.int(frames.length)] });
    } else {
      const { batch, wrong } = forgedMessage(rng, t);
      out.push({ kind, what: wrong, frame: batch });
    }
  }
  return out;
}
