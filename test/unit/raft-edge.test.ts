// The edge of node-to-node traffic (src/transport/raft-edge.ts): every field
// of an inbound Raft batch, each reason it can be refused for, and the
// promise behind the checks: whatever passes can be stepped by the core and
// re-encoded by this node's own encoder, however far it later counts up.
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { commandProblem } from '../../src/commit/command-check.ts';
import { encodeDecisionBatch, type BatchCommand } from '../../src/commit/decision-batch.ts';
import { encodeCommand, type Command } from '../../src/commit/state.ts';
import { encodeConfChange, ConfChangeType } from '../../src/raft/confchange.ts';
import { encodeProbe, entryProblem, NodeStateMachine, snapshotProblem } from '../../src/node/machine.ts';
import { EntryType, message, MessageType as MT, type Message } from '../../src/raft/types.ts';
import { fromWire, toWire, type WireBatch, type WireMessage } from '../../src/transport/proto.ts';
import {
  checkEnvelope,
  checkMessage,
  DEFAULT_EDGE_LIMITS,
  REFUSAL_REASONS,
  TERM_AHEAD_MAX,
  WIRE_NUMBER_MAX,
  type RaftEdgeView,
  type Refusal,
  type RefusalReason,
} from '../../src/transport/raft-edge.ts';
import { REFUSAL_LINES_MAX, RefusalLog } from '../../src/transport/refusal-log.ts';

const TERM = 5;
const view: RaftEdgeView = {
  clusterId: 'c1',
  selfId: 'n2',
  members: new Set(['n1', 'n2', 'n3']),
  term: TERM,
  entryProblem,
  snapshotProblem,
};

const decide: BatchCommand = {
  t: 'decide',
  txnId: 't1',
  outcome: 'commit',
  reason: '',
  participants: ['shop', 'ledger'],
  atMs: 1,
};
const cmd = (c: Command | Record<string, unknown>): Uint8Array => encodeCommand(c as Command);
const snapshotData = (): Uint8Array => new NodeStateMachine().snapshot();

function batch(...ms: Message[]): WireBatch {
  return { clusterId: 'c1', from: 'n1', to: 'n2', messages: ms.map(toWire) };
}

/** A well-formed message of `type` from n1 to n2 at our term, with what that type carries. */
function good(type: MT, fields: Partial<Message> = {}): Message {
  const base: Partial<Message> = { from: 'n1', to: 'n2', term: TERM };
  if (type === MT.App) {
    Object.assign(base, {
      index: 10,
      logTerm: 4,
      commit: 10,
      entries: [
        { term: 4, index: 11, type: EntryType.Normal, data: encodeDecisionBatch([decide]) },
        { term: 5, index: 12, type: EntryType.Normal, data: new Uint8Array(0) },
        { term: 5, index: 13, type: EntryType.Normal, data: encodeProbe('k', new Uint8Array([1, 2])) },
        {
          term: 5,
          index: 14,
          type: EntryType.ConfChange,
          data: encodeConfChange({
            type: ConfChangeType.AddLearner,
            nodeId: 'n4',
            base: { voters: ['n1', 'n2', 'n3'], learners: [], votersOutgoing: [] },
            context: new Uint8Array(0),
          }),
        },
      ],
    });
  }
  if (type === MT.Snap)
    base.snapshot = {
      metadata: {
        index: 100,
        term: 4,
        confState: { voters: ['n1', 'n2', 'n3'], learners: ['n4'], votersOutgoing: [] },
      },
      data: snapshotData(),
    };
  if (type === MT.ReadIndex) Object.assign(base, { term: 0, context: new Uint8Array(8) });
  return message({ type, ...base, ...fields });
}

/** The refusal of one message (mutated on the wire) in an otherwise good batch. */
function refusalOf(m: Message, mutate: (w: WireMessage) => void = () => {}): Refusal | null {
  const b = batch(m);
  mutate(b.messages[0]);
  return checkEnvelope(b, view) ?? checkMessage(b.messages[0], b, view);
}

/** Reasons the tests of this file saw refused, for the last test. */
const seen = new Set<RefusalReason>();

function expectRefused(r: Refusal | null, reason: RefusalReason, field: string, detail?: RegExp): void {
  expect(r, `refused for ${reason} at ${field}`).not.toBeNull();
  if (r) seen.add(r.reason);
  expect({ reason: r?.reason, field: r?.field }).toEqual({ reason, field });
  if (detail) expect(r?.detail).toMatch(detail);
}

const SENT_TYPES = [
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
];

describe('Raft edge: what passes', () => {
  it('accepts a well-formed message of every type a node sends', () => {
    for (const t of SENT_TYPES) expect(refusalOf(good(t)), MT[t]).toBeNull();
  });

  it('accepts a read or a transfer request relayed on behalf of another member', () => {
    expect(refusalOf(good(MT.ReadIndex, { from: 'n3' }))).toBeNull();
    expect(refusalOf(good(MT.TransferLeader, { from: 'n3' }))).toBeNull();
  });

  it('accepts a term far ahead of ours, up to the bound (terms legitimately jump)', () => {
    expect(refusalOf(good(MT.Heartbeat, { term: TERM + TERM_AHEAD_MAX }))).toBeNull();
  });

  it('a joining node (no configuration yet) still needs the sender to be one it was told about', () => {
    const b = batch(good(MT.Heartbeat));
    expect(checkEnvelope(b, { ...view, members: new Set() })?.reason).toBe('sender');
  });
});

describe('Raft edge: every field, every reason', () => {
  it('cluster: a batch for another cluster (R7)', () => {
    const b = { ...batch(good(MT.Heartbeat)), clusterId: 'c2' };
    expectRefused(checkEnvelope(b, view), 'cluster', 'clusterId', /cluster id mismatch: message for cluster "c2"/);
  });

  it('group: a batch that names as led quiesced a group this node does not host, or one twice, or a non-number', () => {
    const four = { ...view, groups: 4 };
    const named = (quiescedGroups: unknown): WireBatch => ({ ...batch(), quiescedGroups }) as unknown as WireBatch;
    expect(checkEnvelope(named([0, 3]), four)).toBeNull();
    // A frame of no message, only liveness: what an idle node of several groups sends each tick.
    expect(checkEnvelope(named([]), four)).toBeNull();
    expectRefused(checkEnvelope(named([4]), four), 'group', 'quiescedGroups[0]', /4 is not a group of this node/);
    expectRefused(checkEnvelope(named([1, 1]), four), 'group', 'quiescedGroups[1]');
    expectRefused(checkEnvelope(named([0, 1, 2, 3, 0]), four), 'group', 'quiescedGroups', /5 groups named/);
    expectRefused(checkEnvelope(named(['x']), four), 'group', 'quiescedGroups[0]');
    expectRefused(checkEnvelope(named([1]), view), 'group', 'quiescedGroups[0]', /it has 1/);
  });

  it('destination: a batch or a message for another node', () => {
    expectRefused(
      checkEnvelope({ ...batch(good(MT.Heartbeat)), to: 'n3' }, view),
      'destination',
      'to',
      /node id mismatch/,
    );
    expectRefused(
      refusalOf(good(MT.Heartbeat), (w) => (w.to = 'n3')),
      'destination',
      'to',
    );
  });

  it('sender: missing, too long, this node itself, not a member, or not the batch sender', () => {
    expectRefused(checkEnvelope({ ...batch(), from: '' }, view), 'sender', 'from', /missing/);
    const long = 'x'.repeat(100_000);
    const r = checkEnvelope({ ...batch(), from: long }, view);
    expectRefused(r, 'sender', 'from', /100000 characters long/);
    expect(r?.detail.length).toBeLessThan(200);
    expectRefused(checkEnvelope({ ...batch(), from: 'n2' }, view), 'sender', 'from', /this node/);
    // The reported attack: a heartbeat from an id outside the configuration.
    const intruder = { ...batch(good(MT.Heartbeat, { from: 'n9', term: Number.MAX_SAFE_INTEGER })), from: 'n9' };
    expectRefused(
      checkEnvelope(intruder, view),
      'sender',
      'from',
      /"n9" is not a member of the current configuration \(n1, n2, n3\)/,
    );
    expectRefused(
      refusalOf(good(MT.Heartbeat), (w) => (w.from = 'n3')),
      'sender',
      'from',
      /Heartbeat from "n3" in a batch from "n1"/,
    );
    expectRefused(
      refusalOf(good(MT.ReadIndex), (w) => (w.from = 'n9')),
      'sender',
      'from',
      /relayed for "n9"/,
    );
  });

  it('batch_size: more messages than a sender ever batches', () => {
    const b = {
      ...batch(),
      messages: Array.from({ length: DEFAULT_EDGE_LIMITS.messagesPerBatchMax + 1 }, () => toWire(good(MT.Heartbeat))),
    };
    expectRefused(checkEnvelope(b, view), 'batch_size', 'messages');
  });

  it('type: unknown, local, a proposal, or not a number', () => {
    expectRefused(
      refusalOf(good(MT.Heartbeat), (w) => (w.type = 99)),
      'type',
      'type',
    );
    for (const t of [MT.Hup, MT.Beat, MT.Unreachable, MT.SnapStatus, MT.CheckQuorum, MT.Prop])
      expectRefused(
        refusalOf(good(MT.Heartbeat), (w) => (w.type = t)),
        'type',
        'type',
      );
    expectRefused(
      refusalOf(good(MT.Heartbeat), (w) => ((w as unknown as { type: string }).type = 'MSG_APP')),
      'type',
      'type',
    );
  });

  it('number: every numeric field must be an unsigned safe integer within the bound', () => {
    for (const f of ['term', 'logTerm', 'index', 'commit', 'rejectHint'] as const) {
      for (const bad of [-1, 1.5, Number.NaN, 2 ** 53, 2 ** 64, WIRE_NUMBER_MAX + 1]) {
        expectRefused(
          refusalOf(good(MT.Heartbeat), (w) => (w[f] = bad)),
          'number',
          f,
        );
      }
    }
    // The reported attack, from a member this time: term 2^53 - 1 cannot be counted up from.
    expectRefused(
      refusalOf(good(MT.Heartbeat), (w) => (w.term = Number.MAX_SAFE_INTEGER)),
      'number',
      'term',
      /beyond/,
    );
  });

  it('number: a term of 0 (how the core marks a local message), except on a forwarded read, which never has one', () => {
    expectRefused(refusalOf(good(MT.App, { term: 0 })), 'number', 'term', /App without a term/);
    expectRefused(refusalOf(good(MT.Vote, { term: 0 })), 'number', 'term');
    expectRefused(refusalOf(good(MT.ReadIndex, { term: 3 })), 'number', 'term', /forwarded read carries none/);
  });

  it('number: an append or a vote request whose log term is beyond its own term', () => {
    expectRefused(refusalOf(good(MT.App, { logTerm: 6, entries: [] })), 'number', 'logTerm');
    expectRefused(refusalOf(good(MT.Vote, { logTerm: 6 })), 'number', 'logTerm');
  });

  it('term_ahead: a term more than 2^32 ahead of ours', () => {
    expectRefused(refusalOf(good(MT.Heartbeat, { term: TERM + TERM_AHEAD_MAX + 1 })), 'term_ahead', 'term');
  });

  it('entries: on a message that carries none, too many, out of order, or with terms that go back or pass the leader', () => {
    const app = good(MT.App);
    const e0 = app.entries[0];
    expectRefused(
      refusalOf(good(MT.Heartbeat, { entries: [e0] })),
      'entries',
      'entries',
      /Heartbeat carries 1 entries/,
    );
    const many = Array.from({ length: DEFAULT_EDGE_LIMITS.entriesPerMessageMax + 1 }, (_, i) => ({
      ...e0,
      index: 11 + i,
      data: new Uint8Array(0),
    }));
    expectRefused(refusalOf(good(MT.App, { entries: many })), 'entries', 'entries');
    expectRefused(
      refusalOf(good(MT.App, { index: 9 })),
      'entries',
      'entries[0].index',
      /does not follow the append's index 9/,
    );
    expectRefused(
      refusalOf(app, (w) => (w.entries[2].index = 14)),
      'entries',
      'entries[2].index',
    );
    expectRefused(
      refusalOf(app, (w) => (w.entries[1].term = 3)),
      'entries',
      'entries[1].term',
      /goes back/,
    );
    expectRefused(
      refusalOf(app, (w) => (w.entries[0].term = 3)),
      'entries',
      'entries[0].term',
      /goes back from 4/,
    );
    expectRefused(
      refusalOf(app, (w) => (w.entries[3].term = 6)),
      'entries',
      'entries[3].term',
      /beyond the leader's term/,
    );
    expectRefused(
      refusalOf(app, (w) => (w.entries[0].index = 2 ** 60)),
      'entries',
      'entries[0].index',
    );
  });

  it('entry_type: an entry type this version does not know', () => {
    expectRefused(
      refusalOf(good(MT.App), (w) => (w.entries[1].type = 7)),
      'entry_type',
      'entries[1].type',
    );
  });

  it('entry_data: a payload the state machine could not apply (the reported tag 127), whichever way it is wrong', () => {
    const withData = (data: Uint8Array, type = EntryType.Normal): Refusal | null =>
      refusalOf(good(MT.App), (w) => ((w.entries[0].data = data), (w.entries[0].type = type)));
    expectRefused(
      withData(new Uint8Array([127, 1, 2])),
      'entry_data',
      'entries[0].data',
      /entry 11: unknown command tag 127/,
    );
    expectRefused(withData(new Uint8Array([0x02, 0x7b])), 'entry_data', 'entries[0].data', /does not decode/);
    expectRefused(withData(cmd({ t: 'explode' })), 'entry_data', 'entries[0].data', /unknown command kind "explode"/);
    expectRefused(
      withData(cmd({ t: 'forget', txnIds: 'all' } as Record<string, unknown>)),
      'entry_data',
      'entries[0].data',
      /forget needs a list/,
    );
    expectRefused(
      withData(cmd({ ...decide, outcome: 'maybe' } as Record<string, unknown>)),
      'entry_data',
      'entries[0].data',
      /decide needs/,
    );
    expectRefused(
      withData(new Uint8Array([0x01, 0x00])),
      'entry_data',
      'entries[0].data',
      /shorter than its 3-byte header/,
    );
    expectRefused(withData(new Uint8Array([0x01, 0xff, 0xff, 0x61])), 'entry_data', 'entries[0].data', /runs past/);
    expectRefused(
      withData(new Uint8Array([0x7b]), EntryType.ConfChange),
      'entry_data',
      'entries[0].data',
      /membership change does not decode/,
    );
    const badAddresses = encodeConfChange({
      type: ConfChangeType.AddLearner,
      nodeId: 'n4',
      base: { voters: ['n1', 'n2', 'n3'], learners: [], votersOutgoing: [] },
      context: Buffer.from('{"addresses":{"n4":""}}'),
    });
    expectRefused(
      withData(badAddresses, EntryType.ConfChange),
      'entry_data',
      'entries[0].data',
      /without an id or an address/,
    );
    const small: RaftEdgeView = view;
    const b = batch(good(MT.App));
    expectRefused(
      checkMessage(b.messages[0], b, small, { ...DEFAULT_EDGE_LIMITS, entryBytesMax: 8 }),
      'entry_data',
      'entries[0].data',
      /at most 8/,
    );
  });

  it('context: longer than any a node sends', () => {
    expectRefused(
      refusalOf(good(MT.Heartbeat, { context: new Uint8Array(DEFAULT_EDGE_LIMITS.contextBytesMax + 1) })),
      'context',
      'context',
    );
  });

  it('snapshot: a Snap without one (the reported attack), or with missing or ill-formed metadata, configuration or data', () => {
    expectRefused(refusalOf(good(MT.Snap, { snapshot: null })), 'snapshot', 'snapshot', /Snap without a snapshot/);
    expectRefused(
      refusalOf(good(MT.Heartbeat), (w) => (w.snapshot = toWire(good(MT.Snap)).snapshot)),
      'snapshot',
      'snapshot',
      /Heartbeat carries a snapshot/,
    );
    const snap = (f: (s: NonNullable<WireMessage['snapshot']>) => void): Refusal | null =>
      refusalOf(good(MT.Snap), (w) => f(w.snapshot!));
    expectRefused(
      snap((s) => (s.metadata = null)),
      'snapshot',
      'snapshot.metadata',
      /missing/,
    );
    expectRefused(
      snap((s) => (s.metadata!.index = 0)),
      'snapshot',
      'snapshot.metadata',
      /empty snapshot/,
    );
    expectRefused(
      snap((s) => (s.metadata!.term = 2 ** 60)),
      'snapshot',
      'snapshot.metadata.term',
    );
    expectRefused(
      snap((s) => (s.metadata!.term = TERM + 1)),
      'snapshot',
      'snapshot.metadata.term',
      /beyond the leader's term/,
    );
    expectRefused(
      snap((s) => (s.metadata!.confState = null)),
      'snapshot',
      'snapshot.metadata.confState',
      /missing/,
    );
    expectRefused(
      snap((s) => (s.metadata!.confState!.voters = [])),
      'snapshot',
      'snapshot.metadata.confState.voters',
      /empty/,
    );
    expectRefused(
      snap((s) => (s.metadata!.confState!.voters = ['n1', 'n1'])),
      'snapshot',
      'snapshot.metadata.confState.voters',
      /twice/,
    );
    expectRefused(
      snap((s) => (s.metadata!.confState!.learners = ['n1'])),
      'snapshot',
      'snapshot.metadata.confState.learners',
      /both a voter and a learner/,
    );
    expectRefused(
      snap((s) => (s.metadata!.confState!.votersOutgoing = [''])),
      'snapshot',
      'snapshot.metadata.confState.votersOutgoing[0]',
    );
    expectRefused(
      snap((s) => (s.data = new Uint8Array([0x7b]))),
      'snapshot',
      'snapshot.data',
      /snapshot data does not restore/,
    );
    expectRefused(
      snap((s) => (s.data = Buffer.from('{"kv":[]}'))),
      'snapshot',
      'snapshot.data',
      /snapshot data does not restore/,
    );
    expectRefused(
      snap((s) => (s.data = Buffer.from('{"kv":[1],"table":{"p":[],"d":[],"t":[]}}'))),
      'snapshot',
      'snapshot.data',
      /snapshot data does not restore/,
    );
    expectRefused(
      snap((s) => (s.data = Buffer.from('{"kv":[],"table":{"p":[null],"d":[],"t":[]}}'))),
      'snapshot',
      'snapshot.data',
      /snapshot data does not restore/,
    );
    expectRefused(
      snap(
        (s) =>
          (s.data = Buffer.from(
            '{"kv":[],"table":{"p":[],"d":[],"t":[],"h":[],"r":[],"hz":null,"sg":[],"st":[]},"members":[["n1",5]],"leases":{"l":[],"c":0}}',
          )),
      ),
      'snapshot',
      'snapshot.data',
      /without an id or an address/,
    );
  });

  it('a message for a group this node does not host is refused; group 0 (absent on the wire) passes at one group, as before groups', () => {
    const hb = good(MT.Heartbeat);
    expect(refusalOf(hb)).toBeNull();
    expect(refusalOf(hb, (w) => (w.group = 0))).toBeNull();
    expectRefused(
      refusalOf(hb, (w) => (w.group = 1)),
      'group',
      'group',
      /1 is not a group of this node \(it has 1\)/,
    );
    const four: RaftEdgeView = { ...view, groups: 4 };
    const at = (g: unknown): Refusal | null => {
      const b = batch(hb);
      b.messages[0].group = g as number;
      return checkMessage(b.messages[0], b, four);
    };
    expect(at(3)).toBeNull();
    for (const bad of [4, -1, 1.5, 'x']) expectRefused(at(bad), 'group', 'group');
  });

  it('every reason of the metric is produced by a test above, or by the transport (undecodable: fuzz-raft) and the core (state: raft-input)', () => {
    const elsewhere: RefusalReason[] = ['undecodable', 'state'];
    expect(REFUSAL_REASONS.filter((r) => !seen.has(r) && !elsewhere.includes(r))).toEqual([]);
  });
});

describe('Raft edge: what passes is safe to step and to send on', () => {
  const edgeNumbers = fc.oneof(
    fc.constantFrom(0, 1, TERM, TERM + TERM_AHEAD_MAX, WIRE_NUMBER_MAX, WIRE_NUMBER_MAX + 1, 2 ** 53, -1, 0.5),
    fc.nat(),
  );
  it("no accepted message makes this node's own encoder refuse a number, even after 2^32 - 1 more elections or entries", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SENT_TYPES),
        edgeNumbers,
        edgeNumbers,
        edgeNumbers,
        edgeNumbers,
        edgeNumbers,
        (type, term, logTerm, index, commit, rejectHint) => {
          const w = toWire(good(type, type === MT.App ? { entries: [] } : {}));
          Object.assign(w, { term, logTerm, index, commit, rejectHint });
          const b: WireBatch = { clusterId: 'c1', from: 'n1', to: 'n2', messages: [w] };
          if (checkMessage(w, b, view) !== null) return;
          const m = fromWire(w);
          const grown = 2 ** 32 - 1;
          expect(() =>
            toWire({
              ...m,
              term: m.term + grown,
              index: m.index + grown,
              commit: m.commit + grown,
              logTerm: m.logTerm + grown,
              rejectHint: m.rejectHint + grown,
            }),
          ).not.toThrow();
        },
      ),
      { seed: 10, numRuns: 2_000 },
    );
  });
});

describe('command check (the commit layer decides what a command is)', () => {
  it('accepts every command kind the engine proposes as a JSON entry', () => {
    const all: Command[] = [
      { t: 'register', id: 'shop', endpoint: '127.0.0.1:1', atMs: 1, kind: 'memory' },
      { ...decide, operator: { operator: 'ops', reason: 'stuck', atMs: 2 } },
      { t: 'forget', txnIds: Array.from({ length: 4_097 }, (_, i) => `t${i}`) },
      {
        t: 'heuristic',
        txnId: 't1',
        participantId: 'shop',
        outcome: 'abort',
        gid: 'g',
        operator: 'ops',
        reason: 'r',
        atMs: 3,
      },
    ];
    for (const c of all) expect(commandProblem(encodeCommand(c)), c.t).toBeNull();
  });

  it('refuses, as a JSON entry of its own, a Decide, Forget or Stage that fits a decision batch; the batch entry carrying it passes', () => {
    const fits: BatchCommand[] = [
      decide,
      { t: 'forget', txnIds: ['t1'] },
      { t: 'stage', txnId: 't2', participants: ['shop'], atMs: 4 },
    ];
    for (const c of fits) {
      expect(commandProblem(encodeCommand(c)), c.t).toBe(
        `a ${c.t} that fits a decision batch rides one (tag 0x04), not a JSON entry of its own`,
      );
      expect(entryProblem(EntryType.Normal, encodeCommand(c)), c.t).toMatch(/fits a decision batch/);
      expect(entryProblem(EntryType.Normal, encodeDecisionBatch([c])), c.t).toBeNull();
    }
  });

  it('refuses an empty payload, an array, null, a missing kind and a malformed operator act', () => {
    expect(commandProblem(new Uint8Array(0))).toMatch(/unknown command tag \(empty\)/);
    expect(commandProblem(cmd([] as unknown as Command))).toMatch(/not an object/);
    expect(commandProblem(Buffer.from([0x02, ...Buffer.from('null')]))).toMatch(/not an object/);
    expect(commandProblem(cmd({ id: 'x' }))).toMatch(/unknown command kind/);
    expect(commandProblem(cmd({ ...decide, operator: 'ops' } as Record<string, unknown>))).toMatch(
      /malformed operator act/,
    );
  });
});

describe('refusal log', () => {
  it('counts every refusal but logs one line per sender and reason per interval, then says how many it left out', () => {
    const lines: Record<string, unknown>[] = [];
    let nowMs = 0;
    const log = new RefusalLog(
      pino({ level: 'warn' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }),
      10_000,
      () => nowMs,
    );
    const r: Refusal = { reason: 'number', field: 'messages[0].term', detail: 'too big' };
    for (let i = 0; i < 5; i++) log.refuse('n1', r);
    log.refuse('n3', r);
    expect(log.totals().get('number')).toBe(6);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      from: 'n1',
      reason: 'number',
      field: 'messages[0].term',
      detail: 'too big',
      msg: 'refused Raft input from "n1": messages[0].term: too big',
    });
    nowMs = 10_000;
    log.refuse('n1', r);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ from: 'n1', suppressed: 4 });
  });

  it('bounds the lines per interval over all senders (an id costs nothing to vary), and says how many it left out', () => {
    const lines: Record<string, unknown>[] = [];
    let nowMs = 0;
    const log = new RefusalLog(
      pino({ level: 'warn' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }),
      10_000,
      () => nowMs,
    );
    for (let i = 0; i < 1_000; i++)
      log.refuse(`forged-${i}`, { reason: 'sender', field: 'from', detail: 'not a member' });
    expect(log.totals().get('sender')).toBe(1_000);
    expect(lines).toHaveLength(REFUSAL_LINES_MAX);
    nowMs = 10_000;
    log.refuse('n1', { reason: 'number', field: 'term', detail: 'too big' });
    expect(lines[REFUSAL_LINES_MAX]).toMatchObject({ suppressed: 1_000 - REFUSAL_LINES_MAX });
    expect(lines[REFUSAL_LINES_MAX + 1]).toMatchObject({ from: 'n1', reason: 'number' });
  });

  it('clips a hostile sender id in the log line', () => {
    const lines: string[] = [];
    const log = new RefusalLog(pino({ level: 'warn' }, { write: (s: string) => void lines.push(s) }));
    log.refuse('x'.repeat(100_000), { reason: 'sender', field: 'from', detail: 'too long' });
    expect(lines[0].length).toBeLessThan(1_000);
  });
});
