// The snapshot's bytes are a stored format (docs/storage.md): a node writes
// them and any node of the cluster, of this version or another, restores
// them. This pins them: a state machine holding a participant, an operator's
// decision, a heuristic report, a saga and a lease, and that applied a log
// probe, snapshots to exactly these bytes, and restoring them gives the same
// bytes back. Moving a table between modules must not move a byte.
import { describe, expect, it } from 'vitest';
import { encodeCommand } from '../../src/commit/state.ts';
import { encodeLeaseCommand } from '../../src/lease/state.ts';
import { encodeProbe, NodeStateMachine } from '../../src/node/machine.ts';
import { nodeProducts } from '../../src/node/products.ts';
import { EntryType, type Entry } from '../../src/raft/types.ts';
import type { SagaCommand } from '../../src/saga/state.ts';

const entry = (index: number, data: Uint8Array): Entry => ({ index, term: 1, type: EntryType.Normal, data });
const saga = (cmd: SagaCommand): Uint8Array => encodeCommand(cmd);
/** A state machine as the node builds it: the decision table and the product tables beside it. */
const machine = (): NodeStateMachine => new NodeStateMachine(nodeProducts().tables);

function filled(): NodeStateMachine {
  const m = machine();
  const op = { operator: 'ops', reason: 'incident 7', atMs: 40 };
  let i = 0;
  m.apply(
    entry(
      ++i,
      encodeCommand({
        t: 'register',
        id: 'p1',
        endpoint: '127.0.0.1:7001',
        atMs: 10,
        kind: 'memory',
        serves: ['Exchange'],
      }),
    ),
  );
  m.apply(
    entry(
      ++i,
      encodeCommand({
        t: 'decide',
        txnId: 't1',
        outcome: 'abort',
        reason: 'operator',
        participants: ['p1'],
        atMs: 41,
        operator: op,
      }),
    ),
  );
  m.apply(
    entry(
      ++i,
      encodeCommand({
        t: 'heuristic',
        txnId: 't1',
        participantId: 'p1',
        outcome: 'commit',
        gid: 'g1',
        operator: 'dba',
        reason: 'lock held',
        atMs: 50,
      }),
    ),
  );
  m.apply(
    entry(
      ++i,
      saga({
        t: 'saga.start',
        sagaId: 's1',
        steps: [{ service: 'hotel', name: 'book', input: '{}' }],
        pivot: null,
        atMs: 60,
        owner: 'CN=app',
      }),
    ),
  );
  m.apply(
    entry(
      ++i,
      saga({
        t: 'saga.result',
        sagaId: 's1',
        step: 0,
        kind: 'action',
        outcome: 'done',
        output: 'room 9',
        reason: '',
        atMs: 61,
      }),
    ),
  );
  m.apply(
    entry(
      ++i,
      encodeLeaseCommand({ t: 'lease.acquire', name: 'outbox/p0', holder: 'relay-a', ttlMs: 1_000, atMs: 70 }),
    ),
  );
  // A log probe keeps nothing: the snapshot's `kv` stays empty.
  m.apply(entry(++i, encodeProbe('k', new Uint8Array([1, 2, 3]))));
  return m;
}

describe('snapshot format', () => {
  it('a state machine with every table filled snapshots to the same bytes, and restores to them', () => {
    const bytes = Buffer.from(filled().snapshot()).toString('utf8');
    expect(bytes).toBe(GOLDEN);
    const copy = machine();
    copy.restore(Buffer.from(GOLDEN));
    expect(Buffer.from(copy.snapshot()).toString('utf8')).toBe(GOLDEN);
  });

  it('a snapshot of an earlier version, whose key/value map holds keys, restores: every table as it was, the keys dropped', () => {
    // What a node of an earlier version wrote for the same state: its map held the key "k" (value 1, 2, 3).
    const old = GOLDEN.replace('"kv":[]', '"kv":[["k","AQID"],["other","eA=="]]');
    expect(old).not.toBe(GOLDEN);
    const copy = machine();
    expect(copy.snapshotProblem(Buffer.from(old))).toBeNull();
    copy.restore(Buffer.from(old));
    expect(Buffer.from(copy.snapshot()).toString('utf8')).toBe(GOLDEN);
    expect(copy.table.participants.get('p1')?.endpoint).toBe('127.0.0.1:7001');
    // Without the field at all (nothing writes that today) it restores the same.
    const none = machine();
    none.restore(Buffer.from(GOLDEN.replace('"kv":[],', '')));
    expect(Buffer.from(none.snapshot()).toString('utf8')).toBe(GOLDEN);
  });
});

const GOLDEN =
  '{"kv":[],"table":{"p":[{"id":"p1","endpoint":"127.0.0.1:7001","registeredAtMs":10,"resourceKind":"memory","serves":["Exchange"]}],"d":[{"txnId":"t1","outcome":"abort","reason":"operator","participants":["p1"],"index":2,"decidedAtMs":41}],"t":[],"h":[["t1",[{"txnId":"t1","participantId":"p1","outcome":"commit","gid":"g1","operator":"dba","reason":"lock held","atMs":50,"kind":"HEURMIX","decision":"abort","index":3}]]],"r":[["t1",[{"operator":"ops","reason":"incident 7","atMs":40,"outcome":"abort","decided":true,"index":2}]]],"hz":null,"sg":{"s":[{"id":"s1","owner":"CN=app","steps":[{"service":"hotel","name":"book","input":"{}"}],"pivot":null,"state":"finished","status":["done"],"outputs":["room 9"],"startedAtMs":60,"endedAtMs":61,"stuck":null,"ended":false,"timeline":[{"atMs":60,"index":4,"what":"started","detail":"1 steps, pivot none"},{"atMs":60,"index":4,"what":"sent","step":0,"kind":"action"},{"atMs":61,"index":5,"what":"done","step":0,"kind":"action"},{"atMs":61,"index":5,"what":"finished"}],"index":4}],"t":[],"hz":null},"st":[]},"members":[],"leases":{"l":[{"name":"outbox/p0","holder":"relay-a","owner":"","epoch":1,"expiresAtMs":1070}],"c":70,"e":1}}';
