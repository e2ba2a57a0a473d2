// The CLI's hand-written NodeStatus decoder (src/transport/status-wire.ts)
// against proto-loader's, which the node encodes with: the same bytes give
// the same value, unknown fields included, and bytes that are not a
// NodeStatus are refused with a StatusWireError, never another exception.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { raftNodeService, type NodeStatus } from '../../src/transport/proto.ts';
import { decodeNodeStatus, StatusWireError } from '../../src/transport/status-wire.ts';

const method = raftNodeService.Status;
const encode = (s: NodeStatus): Buffer => method.responseSerialize(s);
const reference = (b: Buffer): NodeStatus => method.responseDeserialize(b);

const index = fc.maxSafeNat();
const peerArb = fc.record({
  nodeId: fc.string(),
  address: fc.string(),
  matchIndex: index,
  nextIndex: index,
  state: fc.string(),
});
const statusArb: fc.Arbitrary<NodeStatus> = fc.record({
  clusterId: fc.string(),
  nodeId: fc.string({ unit: 'grapheme' }),
  address: fc.string(),
  role: fc.constantFrom('leader', 'follower', 'candidate', 'pre-candidate', ''),
  term: index,
  leaderId: fc.string(),
  commitIndex: index,
  appliedIndex: index,
  lastIndex: index,
  firstIndex: index,
  peers: fc.array(peerArb, { maxLength: 6 }),
  pid: fc.nat({ max: 0xffff_ffff }),
  version: fc.string({ maxLength: 64 }),
  consoleUrl: fc.string({ maxLength: 300 }),
});

/** A tag: field number and wire type. */
const tag = (field: number, wireType: number): number[] => varint(field * 8 + wireType);
function varint(n: number): number[] {
  const out: number[] = [];
  let v = BigInt(n);
  do {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v > 0n ? b | 0x80 : b);
  } while (v > 0n);
  return out;
}

describe('NodeStatus decoding (the fast status path)', () => {
  it('decodes whatever the node encodes exactly as proto-loader does', () => {
    fc.assert(
      fc.property(statusArb, (s) => {
        const bytes = encode(s);
        const mine = decodeNodeStatus(bytes);
        expect(mine).toEqual(reference(bytes));
        expect(mine).toEqual(s);
      }),
      { numRuns: 300 },
    );
  });

  it('skips fields it does not know (a newer node), of every wire type, as proto-loader does', () => {
    fc.assert(
      fc.property(statusArb, fc.nat({ max: 1_000 }), (s, n) => {
        const unknown = [
          ...tag(100, 0),
          ...varint(n),
          ...tag(101, 2),
          3,
          1,
          2,
          3,
          ...tag(102, 5),
          1,
          2,
          3,
          4,
          ...tag(103, 1),
          1,
          2,
          3,
          4,
          5,
          6,
          7,
          8,
        ];
        const bytes = Buffer.concat([Buffer.from(unknown), encode(s), Buffer.from(unknown)]);
        expect(decodeNodeStatus(bytes)).toEqual(reference(bytes));
        expect(decodeNodeStatus(bytes)).toEqual(s);
      }),
      { numRuns: 100 },
    );
  });

  it('refuses every truncation of a status with a StatusWireError, or reads it as proto-loader does', () => {
    fc.assert(
      fc.property(statusArb, (s) => {
        const bytes = encode(s);
        for (let cut = 0; cut < bytes.length; cut++) {
          const part = bytes.subarray(0, cut);
          let mine: NodeStatus | Error;
          try {
            mine = decodeNodeStatus(part);
          } catch (err) {
            mine = err as Error;
          }
          if (mine instanceof Error) expect(mine).toBeInstanceOf(StatusWireError);
          else expect(mine).toEqual(reference(part));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('refuses random bytes with a StatusWireError, never another exception', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          decodeNodeStatus(bytes);
        } catch (err) {
          expect(err).toBeInstanceOf(StatusWireError);
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('names the field that is wrong', () => {
    const refusal = (bytes: number[]): string => {
      try {
        decodeNodeStatus(Uint8Array.from(bytes));
      } catch (err) {
        expect(err).toBeInstanceOf(StatusWireError);
        return (err as Error).message;
      }
      throw new Error('decoded');
    };
    // term (field 5) sent as a string
    expect(refusal([...tag(5, 2), 1, 65])).toMatch(/^NodeStatus: term has wire type 2, expected 0/);
    // node_id (field 2) claims more bytes than there are
    expect(refusal([...tag(2, 2), 10, 65])).toMatch(/^NodeStatus: node_id claims 10 bytes, 1 remain/);
    // node_id is not UTF-8
    expect(refusal([...tag(2, 2), 2, 0xc3, 0x28])).toMatch(/^NodeStatus: node_id is not UTF-8/);
    // commit_index (field 7) past 2^53: a count no node reaches, refused rather than rounded
    expect(refusal([...tag(7, 0), ...varint(2 ** 53 + 2)])).toMatch(/^NodeStatus: commit_index is \d+, beyond 2\^53/);
    // a varint longer than 10 bytes
    expect(refusal([...tag(5, 0), ...Array(11).fill(0xff)])).toMatch(/longer than 10 bytes/);
    // pid past uint32
    expect(refusal([...tag(12, 0), ...varint(2 ** 32)])).toMatch(/^NodeStatus: pid is 4294967296, beyond uint32/);
    // a version longer than any semver
    expect(refusal([...tag(13, 2), 65, ...Array(65).fill(0x31)])).toMatch(
      /^NodeStatus: version is 65 characters, more than 64/,
    );
    // a group (wire type 3), which proto3 does not have
    expect(refusal([...tag(40, 3)])).toMatch(/wire type 3/);
    // field number 0
    expect(refusal([0, 0])).toMatch(/field number 0/);
    // a peer's match_index sent as a string: the peer is named
    expect(refusal([...tag(11, 2), 3, ...tag(3, 2), 1, 65])).toMatch(
      /^NodeStatus\.peers\[0\]: match_index has wire type 2/,
    );
  });
});
