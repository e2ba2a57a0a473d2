// Reads a node's Prometheus counters (its metricsListen) for the bench: the
// messages it sent and the syncs it made (src/node/metrics.ts), taken at a
// load generator's window marks and subtracted, as CPU is
// (bench/harness/cpu-sample.ts).

/** The counters the groups scenario reads, summed over their labels where it says so. */
export interface NodeCounts {
  raftMessages: number;
  raftBatches: number;
  raftBytes: number;
  participantRequests: number;
  participantRequestMessages: number;
  participantAnswers: number;
  participantAnswerMessages: number;
  /** Persisted Readys that were synced, every group of the node together (one per group batch). */
  syncedPersists: number;
  /** The shared writer at G > 1: its batches and segment fsyncs; null at one group. */
  writerBatches: number | null;
  segmentSyncs: number | null;
}

/** `name{labels} value` lines of the exposition format: value by name and label text ('' without labels). */
export function parseExposition(text: string): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const [, name, labels = '', value] = m;
    let byLabels = out.get(name);
    if (byLabels === undefined) out.set(name, (byLabels = new Map()));
    byLabels.set(labels, Number(value));
  }
  return out;
}

function sumWhere(m: Map<string, Map<string, number>>, name: string, has: string[] = []): number | null {
  const byLabels = m.get(name);
  if (byLabels === undefined) return null;
  let total = 0;
  for (const [labels, v] of byLabels) if (has.every((h) => labels.includes(h))) total += v;
  return total;
}

export function nodeCounts(text: string): NodeCounts {
  const m = parseExposition(text);
  const need = (name: string, has: string[] = []): number => {
    const v = sumWhere(m, name, has);
    if (v === null) throw new Error(`the node's metrics have no ${name} (a node older than the groups benchmark?)`);
    return v;
  };
  return {
    raftMessages: need('verdict_raft_messages_sent_total'),
    raftBatches: need('verdict_raft_message_batches_sent_total'),
    raftBytes: need('verdict_raft_message_bytes_sent_total'),
    participantRequests: need('verdict_participant_messages_total', ['kind="request"', 'unit="request"']),
    participantRequestMessages: need('verdict_participant_messages_total', ['kind="request"', 'unit="message"']),
    participantAnswers: need('verdict_participant_messages_total', ['kind="answer"', 'unit="request"']),
    participantAnswerMessages: need('verdict_participant_messages_total', ['kind="answer"', 'unit="message"']),
    syncedPersists: sumWhere(m, 'verdict_raft_persist_duration_seconds_count', ['sync="true"']) ?? 0,
    writerBatches: sumWhere(m, 'verdict_storage_writes_total', ['what="batch"']),
    segmentSyncs: sumWhere(m, 'verdict_storage_writes_total', ['what="segment_sync"']),
  };
}

/** GETs http://address/metrics and reads the counters. */
export async function scrapeNode(address: string, timeoutMs = 5_000): Promise<NodeCounts> {
  const res = await fetch(`http://${address}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`metrics at ${address} answered ${res.status}`);
  return nodeCounts(await res.text());
}

/** b − a, field by field (null stays null). */
export function countsBetween(a: NodeCounts, b: NodeCounts): NodeCounts {
  const d = (x: number | null, y: number | null): number | null => (x === null || y === null ? null : y - x);
  return {
    raftMessages: b.raftMessages - a.raftMessages,
    raftBatches: b.raftBatches - a.raftBatches,
    raftBytes: b.raftBytes - a.raftBytes,
    participantRequests: b.participantRequests - a.participantRequests,
    participantRequestMessages: b.participantRequestMessages - a.participantRequestMessages,
    participantAnswers: b.participantAnswers - a.participantAnswers,
    participantAnswerMessages: b.participantAnswerMessages - a.participantAnswerMessages,
    syncedPersists: b.syncedPersists - a.syncedPersists,
    writerBatches: d(a.writerBatches, b.writerBatches),
    segmentSyncs: d(a.segmentSyncs, b.segmentSyncs),
  };
}
