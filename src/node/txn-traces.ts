// The node's memory of each transaction's trace context: the client's
// `traceparent` arrives with Begin or Commit, and everything this node does
// for the transaction afterwards (PREPARE, the decision's replication,
// DECISION deliveries long after the client was answered) continues it.
//
// Kept beside the engine, not in it: the commit engine (src/commit) stays
// free of tracing. The leader hands a transaction's context to its Decide or
// Stage record (NodeCoreOptions.traceOf), and every node that applies the
// record learns it here: a follower's log lines about the transaction carry
// its trace id, and after a leader change the new leader's DECISIONs continue
// the same trace. What a node cannot learn (a decision that reached it in a
// snapshot; a context pushed out by the bound) costs a gap in the trace,
// never a decision.
//
// With tracing off (no OTLP endpoint) no span is made, and a context is kept
// only when the client sent one: it is passed on to the participants as it
// came, so their spans still join the application's trace.
import type { TraceContext } from '../transport/trace-context.ts';
import { traceContext, traceIdOf } from '../transport/trace-context.ts';
import type { SpanValue, TraceSpan, Tracing } from '../transport/tracing.ts';

export class TxnTraces {
  /** txnId → the context the node's next span for it continues; insertion order is age order. */
  private readonly contexts = new Map<string, TraceContext>();
  /** txnId → the span from proposing its decision to applying it. */
  private readonly replicating = new Map<string, TraceSpan>();

  constructor(
    readonly tracing: Tracing,
    /** Contexts kept at most (the engine's bound on the transactions it holds); past it the oldest goes. */
    private readonly max: number,
  ) {}

  /**
   * A client's Begin, Commit or Abort for `txnId` arrived with `incoming`
   * (null: none). Answers the server span to end when the call is answered
   * (null when tracing is off); what later spans continue is remembered.
   */
  received(rpc: string, txnId: string, incoming: TraceContext | null): TraceSpan | null {
    const parent = incoming ?? this.contexts.get(txnId);
    const span = this.tracing.on
      ? this.tracing.start(`verdict.node.${rpc}`, 'server', parent, { 'verdict.txn_id': txnId })
      : null;
    const ctx = span?.context ?? incoming;
    if (ctx !== null && ctx !== undefined) this.remember(txnId, ctx);
    return span;
  }

  /** The traceparent `txnId`'s Decide or Stage record carries (undefined: none). */
  traceparentOf(txnId: string): string | undefined {
    return this.contexts.get(txnId)?.traceparent;
  }

  /**
   * An applied Decide or Stage record carried `traceparent`: kept unless this node already has a context for `txnId`.
   */
  learned(txnId: string, traceparent: string): void {
    if (this.contexts.has(txnId)) return;
    const ctx = traceContext(traceparent);
    if (ctx !== null) this.remember(txnId, ctx);
  }

  contextOf(txnId: string): TraceContext | undefined {
    return this.contexts.get(txnId);
  }

  /** The trace id a log line about `txnId` carries; undefined when it has none. */
  traceIdOf(txnId: string): string | undefined {
    const ctx = this.contexts.get(txnId);
    return ctx === undefined ? undefined : traceIdOf(ctx);
  }

  /**
   * A client span for one message about `txnId` (a PREPARE, a DECISION); null when off or the transaction is untraced.
   */
  child(name: string, txnId: string, attributes: Record<string, SpanValue>): TraceSpan | null {
    if (!this.tracing.on) return null;
    const parent = this.contexts.get(txnId);
    if (parent === undefined) return null;
    return this.tracing.start(name, 'client', parent, { 'verdict.txn_id': txnId, ...attributes });
  }

  /** The decision for `txnId` is proposed (again, after a failed proposal: the first span stays). */
  proposing(txnId: string, outcome: string): void {
    if (!this.tracing.on || this.replicating.has(txnId)) return;
    const span = this.child('verdict.decision.replicate', txnId, { 'verdict.outcome': outcome });
    if (span !== null) this.replicating.set(txnId, span);
  }

  /** The decision for `txnId` applied at `index` (every node calls it; only the proposer has a span). */
  applied(txnId: string, index: number): void {
    const span = this.replicating.get(txnId);
    if (span === undefined) return;
    this.replicating.delete(txnId);
    span.set('verdict.log_index', index);
    span.end();
  }

  /** The proposal failed (it may still commit later; the span says so and ends). */
  proposalFailed(txnId: string, err: Error): void {
    const span = this.replicating.get(txnId);
    if (span === undefined) return;
    this.replicating.delete(txnId);
    span.end(err.message);
  }

  /** Every participant acknowledged and the decision is forgotten (R5): nothing more will be done for these. */
  forget(txnIds: Iterable<string>): void {
    for (const id of txnIds) {
      this.contexts.delete(id);
      this.replicating.get(id)?.end();
      this.replicating.delete(id);
    }
  }

  /**
   * This node stopped leading: its replication spans end. The contexts stay (a later leader,
   * maybe this node again, continues them); a forget or the bound collects them.
   */
  clear(): void {
    for (const s of this.replicating.values()) s.end('leadership changed');
    this.replicating.clear();
  }

  get size(): number {
    return this.contexts.size;
  }

  private remember(txnId: string, ctx: TraceContext): void {
    this.contexts.delete(txnId);
    this.contexts.set(txnId, ctx);
    if (this.contexts.size > this.max) {
      const oldest = this.contexts.keys().next().value as string;
      this.contexts.delete(oldest);
      this.replicating.get(oldest)?.end();
      this.replicating.delete(oldest);
    }
  }
}
