// The promise of the edge, checked against the production core and driver:
// a sequence of random messages from members, each one the edge accepts,
// never makes the node throw — not in the core's step, not in the store's
// checks of what it is asked to persist (the rules src/storage/level.ts
// asserts), not in this node's encoder or transport on the way out, and not
// in the state machine when committed entries are applied.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeDecisionBatch } from '../../src/commit/decision-batch.ts';
import { encodeCommand } from '../../src/commit/state.ts';
import { Driver } from '../../src/node/driver.ts';
import { encodeProbe, entryProblem, NodeStateMachine, snapshotProblem } from '../../src/node/machine.ts';
import { foundingHardState, RawNode } from '../../src/raft/raw-node.ts';
import {
  EntryType,
  message,
  MessageType as MT,
  type Entry,
  type HardState,
  type Message,
  type Snapshot,
} from '../../src/raft/types.ts';
import type { LogStore, PersistBatch } from '../../src/storage/types.ts';
import { toWire } from '../../src/transport/proto.ts';
import { checkEnvelope, checkMessage, RELAYED_TYPES, type RaftEdgeView } from '../../src/transport/raft-edge.ts';

const SELF = 'n2';
const VOTERS = ['n1', 'n2', 'n3'];

/** A store that enforces what the LevelDB store asserts, answering at once. */
class StrictStore implements LogStore {
  hs: HardState = { term: 0, vote: '', commit: 0 };
  snapIndex = 0;
  entries: Entry[] = [];
  persist(b: PersistBatch, done: (err: Error | null) => void): void {
    if (b.snapshot) {
      const i = b.snapshot.metadata.index;
      if (i < this.snapIndex || i < this.hs.commit)
        throw new Error(`store: snapshot ${i} behind ${this.snapIndex} or commit ${this.hs.commit}`);
      this.snapIndex = i;
      this.entries = [];
    }
    if (b.entries.length > 0) {
      const first = b.entries[0].index;
      const last = this.snapIndex + this.entries.length;
      if (first <= this.snapIndex || first > last + 1 || first <= this.hs.commit)
        throw new Error(`store: entry ${first} (snapshot ${this.snapIndex}, last ${last}, commit ${this.hs.commit})`);
      this.entries = this.entries.slice(0, first - this.snapIndex - 1);
      for (const e of b.entries) {
        const prev = this.entries.at(-1);
        if (prev && (e.index !== prev.index + 1 || e.term < prev.term))
          throw new Error(`store: entry ${e.index}/${e.term} after ${prev.index}/${prev.term}`);
        this.entries.push(e);
      }
    }
    if (b.hardState) {
      const h = b.hardState;
      if (h.term < this.hs.term || h.commit < this.hs.commit || h.commit > this.snapIndex + this.entries.length)
        throw new Error(`store: hard state ${JSON.stringify(h)} after ${JSON.stringify(this.hs)}`);
      this.hs = h;
    }
    if (b.localSnapshot) this.snapIndex = Math.max(this.snapIndex, b.localSnapshot.metadata.index);
    done(null);
  }
}

function node(): { d: Driver<unknown>; raw: RawNode; sent: Message[] } {
  const raw = RawNode.restart(
    { id: SELF, random: () => 0, electionTicks: 4, heartbeatTicks: 1 },
    {
      hardState: foundingHardState(),
      snapshot: {
        metadata: { index: 0, term: 0, confState: { voters: [], learners: [], votersOutgoing: [] } },
        data: new Uint8Array(0),
      },
      entries: [],
    },
    { voters: VOTERS, learners: [], votersOutgoing: [] },
  );
  const sent: Message[] = [];
  const d = new Driver<unknown>({
    node: raw,
    store: new StrictStore(),
    transport: {
      send: (msgs) => {
        for (const m of msgs) {
          // The transport's own assertions, then the encoder's.
          if (m.from !== SELF && !RELAYED_TYPES.has(m.type)) throw new Error(`outbound ${MT[m.type]} from ${m.from}`);
          if (m.to === SELF || m.to === '') throw new Error(`outbound ${MT[m.type]} to ${m.to}`);
          toWire(m);
          sent.push(m);
        }
      },
    },
    sm: new NodeStateMachine(),
    snapshotEntries: 8,
    snapshotKeepEntries: 2,
    waitersMax: 100,
    onFatal: (err) => {
      throw err;
    },
  });
  return { d, raw, sent };
}

const payloads = [
  new Uint8Array(0),
  encodeProbe('k', new Uint8Array([1])),
  encodeDecisionBatch([{ t: 'forget', txnIds: ['a'] }]),
  encodeCommand({ t: 'register', id: 'p', endpoint: '127.0.0.1:1', atMs: 1, kind: 'memory' }),
];

function snapshot(index: number, term: number): Snapshot {
  return {
    metadata: { index, term, confState: { voters: VOTERS, learners: [], votersOutgoing: [] } },
    data: new NodeStateMachine().snapshot(),
  };
}

// Numbers relative to where the node stands, so that messages land where they matter (its term, its last index).
const near = (lo: number, hi: number): fc.Arbitrary<number> => fc.integer({ min: lo, max: hi });
const step = fc.record({
  tick: fc.boolean(),
  /** Win an election first (a pre-vote and a vote granted by n1), so that the leader's paths are reached too. */
  elect: fc.nat({ max: 7 }).map((n) => n === 0),
  type: fc.constantFrom(
    MT.App,
    MT.AppResp,
    MT.Vote,
    MT.VoteResp,
    MT.PreVote,
    MT.PreVoteResp,
    MT.Snap,
    MT.Heartbeat,
    MT.HeartbeatResp,
    MT.TransferLeader,
    MT.TimeoutNow,
    MT.ReadIndex,
    MT.ReadIndexResp,
  ),
  from: fc.constantFrom('n1', 'n3'),
  term: fc.oneof(
    near(0, 1),
    near(-1, 2),
    fc.nat({ max: 20 }).map((n) => n - 100),
  ),
  logTerm: near(0, 2),
  index: near(-4, 4),
  commit: near(-4, 6),
  reject: fc.boolean(),
  rejectHint: near(-6, 6),
  entryTerms: fc.array(fc.nat({ max: 2 }), { maxLength: 5 }),
  payload: fc.nat({ max: payloads.length - 1 }),
  snapIndex: near(-2, 12),
});

describe('the edge and the core together', () => {
  it('no sequence of accepted messages from members makes the node throw, store out of order or send what it cannot encode', () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
        const { d, raw } = node();
        const view = (): RaftEdgeView => ({
          clusterId: 'c',
          selfId: SELF,
          members: new Set(VOTERS),
          term: raw.raft.term,
          entryProblem,
          snapshotProblem,
        });
        for (const s of steps) {
          if (s.tick) d.tick();
          if (s.elect && raw.raft.role !== 'leader') {
            raw.campaign();
            d.receive([message({ type: MT.PreVoteResp, from: 'n1', to: SELF, term: raw.raft.term + 1 })]);
            d.receive([message({ type: MT.VoteResp, from: 'n1', to: SELF, term: raw.raft.term })]);
          }
          const cur = raw.raft.term;
          const last = raw.raft.log.lastIndex();
          // A term below -50 is an absolute one (0..20): stale and far-off terms too.
          const term = s.term < -50 ? s.term + 100 : Math.max(0, cur + s.term);
          const logTerm = Math.max(0, term - s.logTerm);
          const index = Math.max(0, last + s.index);
          let t = logTerm;
          const entries: Entry[] =
            s.type === MT.App
              ? s.entryTerms.map((dt, i) => ({
                  term: (t += dt),
                  index: index + 1 + i,
                  type: EntryType.Normal,
                  data: payloads[s.payload],
                }))
              : [];
          const m = message({
            type: s.type,
            from: s.from,
            to: SELF,
            term: s.type === MT.ReadIndex ? 0 : term,
            logTerm,
            index,
            commit: Math.max(0, last + s.commit),
            reject: s.reject,
            rejectHint: Math.max(0, last + s.rejectHint),
            entries,
            context: s.type === MT.ReadIndex || s.type === MT.HeartbeatResp ? new Uint8Array(8) : new Uint8Array(0),
            snapshot: s.type === MT.Snap ? snapshot(Math.max(0, last + s.snapIndex), logTerm) : null,
          });
          const b = { clusterId: 'c', from: s.from, to: SELF, messages: [toWire(m)] };
          const v = view();
          if (checkEnvelope(b, v) !== null || checkMessage(b.messages[0], b, v) !== null) continue;
          accepted++;
          d.receive([m]);
        }
      }),
      { seed: 42, numRuns: 1_500 },
    );
    // The generator must reach the core often, or the property says nothing.
    expect(accepted).toBeGreaterThan(5_000);
  });
});
