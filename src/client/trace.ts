// The SDK's side of tracing: the W3C trace context a call continues (the
// application's `trace`, or the transaction's), sent as gRPC metadata, and,
// with an OTLP endpoint configured, a client span around the call whose
// context is what the nodes then continue (src/transport/tracing.ts).
import { TRACEPARENT_KEY, TRACESTATE_KEY, traceContext, type TraceContext } from '../transport/trace-context.ts';
import type { SpanValue, Tracing } from '../transport/tracing.ts';
import { invalidArgument } from './errors.ts';
import type { CallOptions } from './connection.ts';

export type { TraceContext };

/** A caller's trace context, checked: a malformed traceparent is the caller's mistake, said at once. */
export function checkedTrace(trace: TraceContext | undefined): TraceContext | undefined {
  if (trace === undefined) return undefined;
  const ctx = traceContext(trace.traceparent, trace.tracestate);
  if (ctx === null)
    throw invalidArgument(
      `trace.traceparent ${JSON.stringify(String(trace.traceparent).slice(0, 80))} is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)`,
    );
  return ctx;
}

/** `call` with the context's traceparent (and tracestate) added to its metadata. */
export function withTrace(call: CallOptions, ctx: TraceContext | undefined): CallOptions {
  if (ctx === undefined) return call;
  const metadata: Record<string, string> = { ...call.metadata, [TRACEPARENT_KEY]: ctx.traceparent };
  if (ctx.tracestate !== undefined) metadata[TRACESTATE_KEY] = ctx.tracestate;
  return { ...call, metadata };
}

/**
 * Runs one call under a client span `name` when tracing is on (child of
 * `parent`), or carrying `parent` as it is when off; without either, the
 * call goes as it would untraced. `after` names attributes of the answer.
 */
export async function tracedCall<T>(
  tracing: Promise<Tracing>,
  name: string,
  parent: TraceContext | undefined,
  attributes: Record<string, SpanValue>,
  call: CallOptions,
  run: (call: CallOptions) => Promise<T>,
  after?: (answer: T) => Record<string, SpanValue>,
): Promise<T> {
  const t = await tracing;
  const span = t.on ? t.start(name, 'client', parent, attributes) : null;
  if (span === null) return run(withTrace(call, parent));
  try {
    const answer = await run(withTrace(call, span.context));
    if (after !== undefined) for (const [k, v] of Object.entries(after(answer))) span.set(k, v);
    span.end();
    return answer;
  } catch (err) {
    span.end(err instanceof Error ? err.message : String(err));
    throw err;
  }
}
