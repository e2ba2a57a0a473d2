// The decision group on a Raft message (proto/raft.proto, Message.group;
// src/transport/proto.ts, toWireEnvelope / fromWireEnvelope): group 0 is
// left out of the bytes, so a cluster of one group sends exactly what a node
// built before groups sends and reads what it reads; any group round-trips;
// the encoder asserts what the decoder refuses.

import fc from 'fast-check';
import * as protoLoader from '@grpc/proto-loader';
import type { MethodDefinition } from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { describe, expect, test } from 'vitest';
import { EntryType, message, MessageType as MT, type Message } from '../../src/raft/types.ts';
import {
  fromWire,
  fromWireEnvelope,
  LOAD_OPTIONS,
  PROTO_PATH,
  streamMethod,
  toWire,
  toWireEnvelope,
  WIRE_GROUP_MAX,
  type WireBatch,
} from '../../src/transport/proto.ts';

/**
 * The same proto without the group field, loaded by proto-loader with the
 * node's options: the encoder and decoder of a node built before groups.
 */
function streamBeforeGroups(): MethodDefinition<WireBatch, WireBatch> {
  const root = protobuf.loadSync(PROTO_PATH);
  const msg = root.lookupType('verdict.raft.Message');
  msg.remove(msg.fields.group);
  const def = protoLoader.fromJSON(root.toJSON(), LOAD_OPTIONS);
  return (def['verdict.raft.Raft'] as Record<string, MethodDefinition<WireBatch, WireBatch>>).Stream;
}
const OLD = streamBeforeGroups();

const msgArb: fc.Arbitrary<Message> = fc
  .record({
    type: fc.constantFrom(
      MT.App,
      MT.AppResp,
      MT.Vote,
      MT.VoteResp,
      MT.PreVote,
      MT.Heartbeat,
      MT.HeartbeatResp,
      MT.TimeoutNow,
    ),
    term: fc.integer({ min: 1, max: 2 ** 40 }),
    index: fc.nat({ max: 2 ** 40 }),
    logTerm: fc.nat({ max: 2 ** 20 }),
    commit: fc.nat({ max: 2 ** 40 }),
    reject: fc.boolean(),
    data: fc.uint8Array({ maxLength: 40 }),
  })
  .map((r) =>
    message({
      type: r.type,
      from: 'n1',
      to: 'n2',
      term: r.term,
      index: r.index,
      logTerm: r.logTerm,
      commit: r.commit,
      reject: r.reject,
      entries: r.type === MT.App ? [{ term: r.term, index: r.index + 1, type: EntryType.Normal, data: r.data }] : [],
    }),
  );

const batchOf = (...ms: WireBatch['messages']): WireBatch => ({ clusterId: 'c1', from: 'n1', to: 'n2', messages: ms });
const encode = (b: WireBatch): Buffer => streamMethod.requestSerialize(b);
const decode = (bytes: Buffer): WireBatch => streamMethod.requestDeserialize(bytes);

describe('the group of a Raft message on the wire', () => {
  test('group 0 is the bytes a node built before groups sends, both ways (a cluster of one group is unchanged)', () => {
    fc.assert(
      fc.property(msgArb, (m) => {
        const now = encode(batchOf(toWireEnvelope({ group: 0, message: m })));
        const before = OLD.requestSerialize(batchOf(toWire(m)));
        expect(now.equals(before)).toBe(true);
        expect(encode(batchOf(toWire(m))).equals(before)).toBe(true);
        // And what the old schema wrote decodes here as group 0's message.
        const back = fromWireEnvelope(decode(before).messages[0]);
        expect(fromWire(OLD.requestDeserialize(now).messages[0])).toEqual(m);
        expect(back.group).toBe(0);
        expect(back.message).toEqual(m);
      }),
      { numRuns: 200 },
    );
  });

  test('every group and message round-trips through the bytes', () => {
    fc.assert(
      fc.property(msgArb, fc.integer({ min: 0, max: WIRE_GROUP_MAX }), (m, group) => {
        const back = fromWireEnvelope(decode(encode(batchOf(toWireEnvelope({ group, message: m })))).messages[0]);
        expect(back).toEqual({ group, message: m });
        // Group 0's plain decoder reads the same message: the group is the envelope's, not the message's.
        expect(fromWire(decode(encode(batchOf(toWireEnvelope({ group, message: m })))).messages[0])).toEqual(m);
      }),
      { numRuns: 200 },
    );
  });

  test("a node built before groups cannot tell group 2's message from group 0's: why G > 1 is a founding choice older binaries cannot open", () => {
    const m = message({ type: MT.Heartbeat, from: 'n1', to: 'n2', term: 3 });
    const read = OLD.requestDeserialize(encode(batchOf(toWireEnvelope({ group: 2, message: m }))));
    expect(read.messages[0].group).toBeUndefined();
    expect(fromWire(read.messages[0])).toEqual(m);
  });

  test('the encoder asserts a group number the wire can carry; the decoder refuses one it cannot, naming the field', () => {
    const m = message({ type: MT.Heartbeat, from: 'n1', to: 'n2', term: 3 });
    for (const bad of [-1, 1.5, WIRE_GROUP_MAX + 1, Number.NaN])
      expect(() => toWireEnvelope({ group: bad, message: m }), String(bad)).toThrow(
        /invariant violated: a group number/,
      );
    for (const bad of [-1, 1.5, 'x', WIRE_GROUP_MAX + 1]) {
      const w = { ...toWire(m), group: bad as number };
      expect(() => fromWireEnvelope(w), String(bad)).toThrow(/^group is not a group number/);
    }
    // Absent (an object built by hand, or a peer's decoder without defaults) is group 0.
    expect(toWire(m).group).toBeUndefined();
    expect(fromWireEnvelope(toWire(m)).group).toBe(0);
  });
});
