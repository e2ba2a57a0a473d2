// W3C trace context (https://www.w3.org/TR/trace-context/) as it travels in
// gRPC metadata: `traceparent` (version, trace id, parent span id, flags) and
// the vendors' `tracestate`. Parsed and checked here, at the edge, like every
// other value that comes off a socket: a malformed header is dropped (the
// request goes on untraced), never trusted and never an error for the caller.
import * as grpc from '@grpc/grpc-js';

export const TRACEPARENT_KEY = 'traceparent';
export const TRACESTATE_KEY = 'tracestate';

/**
 * The W3C limit on tracestate: 32 list members of at most 256 characters; 512 is what implementations must propagate.
 */
const TRACESTATE_CHARS_MAX = 512;
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const TRACESTATE = /^[\x20-\x7e]*$/;

/** One hop's trace context: whom the next span is a child of. */
export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>` */
  traceparent: string;
  tracestate?: string;
}

export interface ParsedTraceparent {
  traceId: string;
  spanId: string;
  /** Bit 0: sampled. */
  flags: number;
}

/**
 * The parts of a traceparent, or null for anything the W3C rules refuse (all-zero ids, version ff, a future version's
 * bad shape).
 */
export function parseTraceparent(text: string): ParsedTraceparent | null {
  if (text.length > 256) return null;
  const m = TRACEPARENT.exec(text.trim().toLowerCase());
  if (m === null) return null;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

export function formatTraceparent(p: ParsedTraceparent): string {
  return `00-${p.traceId}-${p.spanId}-${(p.flags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * A checked context from caller-given text; null when the traceparent is not valid. A tracestate too long or not
 * printable is dropped.
 */
export function traceContext(traceparent: string | undefined, tracestate?: string): TraceContext | null {
  if (traceparent === undefined) return null;
  const p = parseTraceparent(traceparent);
  if (p === null) return null;
  const out: TraceContext = { traceparent: formatTraceparent(p) };
  if (
    tracestate !== undefined &&
    tracestate !== '' &&
    tracestate.length <= TRACESTATE_CHARS_MAX &&
    TRACESTATE.test(tracestate)
  )
    out.tracestate = tracestate;
  return out;
}

/** The trace id of a checked context (the 32 hex digits after the version). */
export function traceIdOf(ctx: TraceContext): string {
  return ctx.traceparent.slice(3, 35);
}

/** The context a request's metadata carries, or null (absent or malformed). */
export function traceFromMetadata(md: grpc.Metadata): TraceContext | null {
  const tp = md.get(TRACEPARENT_KEY)[0];
  if (typeof tp !== 'string') return null;
  const ts = md.get(TRACESTATE_KEY)[0];
  return traceContext(tp, typeof ts === 'string' ? ts : undefined);
}

/** Sets the context on `md` (a new Metadata when none is given). */
export function traceToMetadata(ctx: TraceContext, md: grpc.Metadata = new grpc.Metadata()): grpc.Metadata {
  md.set(TRACEPARENT_KEY, ctx.traceparent);
  if (ctx.tracestate !== undefined) md.set(TRACESTATE_KEY, ctx.tracestate);
  return md;
}
