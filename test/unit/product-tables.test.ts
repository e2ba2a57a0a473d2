// The node's state machine holds product tables beside the decision table
// (src/commit/product-table.ts): it routes a product's commands to its table
// and nowhere else, checks them at the edge with the table's own checks, and
// refuses a wiring in which two tables would claim one command.
import { describe, expect, it } from 'vitest';
import type { TaggedProductTable } from '../../src/commit/product-table.ts';
import { encodeCommand } from '../../src/commit/state.ts';
import { encodeLeaseCommand, LeaseTable } from '../../src/lease/state.ts';
import { NodeStateMachine } from '../../src/node/machine.ts';
import { nodeProducts } from '../../src/node/products.ts';
import { EntryType, type Entry } from '../../src/raft/types.ts';
import { isSagaResult, SagaTable, type SagaCommand } from '../../src/saga/state.ts';

const entry = (index: number, data: Uint8Array): Entry => ({ index, term: 1, type: EntryType.Normal, data });
const start: SagaCommand = {
  t: 'saga.start',
  sagaId: 's1',
  steps: [{ service: 'hotel', name: 'book', input: '' }],
  pivot: null,
  atMs: 1,
};
const acquire = encodeLeaseCommand({ t: 'lease.acquire', name: 'outbox/p0', holder: 'relay-a', ttlMs: 1_000, atMs: 1 });

describe('product tables under the node state machine', () => {
  it('routes a saga command to the saga table and a lease entry to the lease table; the decision table sees neither', () => {
    const p = nodeProducts();
    const m = new NodeStateMachine(p.tables);
    const r = m.apply(entry(1, encodeCommand(start)));
    expect(r !== null && isSagaResult(r) && r.changed).toBe(true);
    expect(p.sagas.sagas.get('s1')?.state).toBe('running');
    expect(m.apply(entry(2, acquire))).toBeNull();
    expect(p.leases.last).toMatchObject({ index: 2, granted: true });
    expect(m.table.decisions.size + m.table.participants.size).toBe(0);
  });

  it("checks a product's commands with its table's checks at the edge, and a machine without that table refuses them", () => {
    const bad = encodeCommand({ ...start, steps: 'none' } as unknown as SagaCommand);
    expect(new NodeStateMachine(nodeProducts().tables).entryProblem(EntryType.Normal, bad)).toMatch(
      /^saga.start needs/,
    );
    const bare = new NodeStateMachine();
    expect(bare.entryProblem(EntryType.Normal, encodeCommand(start))).toMatch(/^unknown command kind "saga.start"/);
    expect(bare.entryProblem(EntryType.Normal, acquire)).toMatch(/^unknown command tag 3/);
    expect(() => bare.apply(entry(1, encodeCommand(start)))).toThrow(
      /log entry 1 cannot be applied: unknown command kind/,
    );
  });

  it('refuses two tables for one command kind, and a tag the kernel reads or another table has', () => {
    expect(() => new NodeStateMachine([new SagaTable(), new SagaTable()])).toThrow(
      /command kind saga.start has one product table/,
    );
    expect(() => new NodeStateMachine([new LeaseTable(), new LeaseTable()])).toThrow(
      /entry tag 3 of product lease is no other table's/,
    );
    const onCommandTag = Object.assign(new LeaseTable(), { tag: 0x02 }) as TaggedProductTable;
    expect(() => new NodeStateMachine([onCommandTag])).toThrow(/entry tag 2 of product lease is no other table's/);
  });
});
