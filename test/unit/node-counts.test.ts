// The node's message and sync counters (src/node/metrics.ts) as the groups
// benchmark reads them back (bench/harness/node-metrics.ts): what a scrape
// says is what the transport, the participant exchanges and the storage
// writer counted.
import { describe, expect, it } from 'vitest';
import { countsBetween, nodeCounts, parseExposition } from '../../bench/harness/node-metrics.ts';
import { NodeMetrics } from '../../src/node/metrics.ts';
import type { PersistBatch } from '../../src/storage/types.ts';

function metrics(o: { storage: boolean }) {
  const sent = { messages: 0, batches: 0, bytes: 0 };
  const exchange = { requests: 0, requestMessages: 0, answers: 0, answerMessages: 0 };
  const writer = { batches: 0, groupBatches: 0, segmentSyncs: 0, levelSyncs: 0 };
  const m = new NodeMetrics({
    nodeId: 'n1',
    driver: () => null,
    engine: () => null,
    table: () => null,
    raftSent: () => sent,
    participantExchange: () => exchange,
    storage: () => (o.storage ? writer : null),
  });
  return { m, sent, exchange, writer };
}

describe('message and sync counters', () => {
  it('are read at scrape time, and the bench subtracts two scrapes', async () => {
    const { m, sent, exchange, writer } = metrics({ storage: true });
    const a = nodeCounts(await m.registry.metrics());
    Object.assign(sent, { messages: 30, batches: 10, bytes: 4_000 });
    Object.assign(exchange, { requests: 8, requestMessages: 3, answers: 8, answerMessages: 5 });
    Object.assign(writer, { batches: 6, groupBatches: 11, segmentSyncs: 6, levelSyncs: 6 });
    const b = nodeCounts(await m.registry.metrics());
    expect(countsBetween(a, b)).toEqual({
      raftMessages: 30,
      raftBatches: 10,
      raftBytes: 4_000,
      participantRequests: 8,
      participantRequestMessages: 3,
      participantAnswers: 8,
      participantAnswerMessages: 5,
      syncedPersists: 0,
      writerBatches: 6,
      segmentSyncs: 6,
    });
  });

  it('leave the writer counts out at one group, where synced persists are the fsyncs', async () => {
    const { m } = metrics({ storage: false });
    const batch: PersistBatch = {
      hardState: null,
      entries: [],
      snapshot: null,
      localSnapshot: null,
      compactTo: 0,
      sync: true,
    };
    m.observePersist(0.001, batch);
    m.observePersist(0.001, { ...batch, sync: false });
    const c = nodeCounts(await m.registry.metrics());
    expect(c.writerBatches).toBeNull();
    expect(c.segmentSyncs).toBeNull();
    expect(c.syncedPersists).toBe(1);
  });

  it('parses labels and skips comments', () => {
    const m = parseExposition('# HELP x y\nx_total{a="1",node="n1"} 3\nx_total{a="2",node="n1"} 4\ny 5e3\n');
    expect([...m.get('x_total')!.values()]).toEqual([3, 4]);
    expect(m.get('y')!.get('')).toBe(5000);
  });
});
