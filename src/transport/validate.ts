// The edge of every public gRPC service: bytes from a socket are hostile
// until checked. Two things happen here, before a handler runs:
//
// - The request's size is checked against requestBytesMax, and its bytes are
//   decoded. grpc-js answers a deserializer that throws with
//   `INTERNAL: Error deserializing request`, which tells a client nothing it
//   can act on; so the wrapped deserializer never throws: it returns a
//   Refused value, and the wrapped handler answers it INVALID_ARGUMENT with
//   the reason (streams end with that status).
// - Helpers bound every string field (ids, reasons, endpoints) and quote an
//   oversized or strange value in errors and logs only as a clipped prefix
//   with its length, so a 100 kB id is neither echoed back nor logged whole.

import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';

/** Longest id (participant, cluster, node) accepted at the edge: the one id rule's (src/domain/id.ts). */
export { ID_CHARS_MAX } from '../domain/id.ts';
/** Longest host:port accepted at the edge (a DNS name is at most 253 characters). */
export const ENDPOINT_CHARS_MAX = 261;
/** How much of a refused value an error or a log line quotes. */
export const QUOTE_CHARS = 64;
/** Default bound of one request message on the public services (config key requestBytesMax). */
export const REQUEST_BYTES_MAX_DEFAULT = 1024 * 1024;

/**
 * A value safe to put in an error or a log line: JSON-quoted, and when longer
 * than QUOTE_CHARS its first QUOTE_CHARS characters and its length.
 */
export function quote(v: string): string {
  if (v.length <= QUOTE_CHARS) return JSON.stringify(v);
  return `${JSON.stringify(v.slice(0, QUOTE_CHARS))}… (${v.length} characters)`;
}

/** What a wrapped deserializer returns instead of throwing. */
export class Refused {
  constructor(readonly details: string) {}
}

export function invalidArgument(details: string): grpc.ServiceError {
  return Object.assign(new Error(`INVALID_ARGUMENT: ${details}`), {
    code: grpc.status.INVALID_ARGUMENT,
    details,
    metadata: new grpc.Metadata(),
  });
}

export interface EdgeOptions {
  /** Largest request message accepted, in bytes. */
  requestBytesMax: number;
  /** Told of every refusal at the edge (for a log line and a metric). */
  onRefused?: (method: string, details: string, peer: string) => void;
}

/**
 * The service with every method's request checked at the edge (see the top
 * of this file). Methods of `definition` missing from `implementation` stay
 * unimplemented.
 */
export function guardService<H extends grpc.UntypedServiceImplementation>(
  definition: grpc.ServiceDefinition<H>,
  implementation: H,
  o: EdgeOptions,
): { definition: grpc.ServiceDefinition<H>; implementation: H } {
  const defs: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  const impls: Record<string, unknown> = {};
  for (const [name, m] of Object.entries(definition as Record<string, grpc.MethodDefinition<unknown, unknown>>)) {
    defs[name] = { ...m, requestDeserialize: guardedDeserialize(name, m.requestDeserialize, o.requestBytesMax) };
    const h = (implementation as Record<string, unknown>)[name];
    if (typeof h !== 'function') continue;
    impls[name] = m.requestStream
      ? guardStream(name, h as (call: StreamCall) => void, o)
      : guardUnary(name, h as UnaryHandler, o);
  }
  return { definition: defs as unknown as grpc.ServiceDefinition<H>, implementation: impls as H };
}

function guardedDeserialize(method: string, inner: (b: Buffer) => unknown, bytesMax: number): (b: Buffer) => unknown {
  return (bytes: Buffer) => {
    if (bytes.length > bytesMax)
      return new Refused(
        `${method} request of ${bytes.length} bytes exceeds the limit of ${bytesMax} bytes (requestBytesMax)`,
      );
    try {
      return inner(bytes);
    } catch (err) {
      return new Refused(
        `${method} request is not a valid protobuf message: ${quote(err instanceof Error ? err.message : String(err))}`,
      );
    }
  };
}

type UnaryHandler = (
  call: { request: unknown; getPeer(): string },
  cb: (err: Partial<grpc.StatusObject> | null) => void,
) => void;
type StreamCall = {
  getPeer(): string;
  on(ev: string, fn: (...a: unknown[]) => void): unknown;
  emit(ev: string, ...a: unknown[]): boolean;
};

function guardUnary(method: string, h: UnaryHandler, o: EdgeOptions): UnaryHandler {
  return (call, cb) => {
    const r = call.request;
    if (!(r instanceof Refused)) return h(call, cb);
    o.onRefused?.(method, r.details, call.getPeer());
    cb(invalidArgument(r.details));
  };
}

/**
 * A stream whose message is refused ends with INVALID_ARGUMENT; the handler
 * never sees the message (its 'data' listeners are called with good ones only).
 */
function guardStream(method: string, h: (call: StreamCall) => void, o: EdgeOptions): (call: StreamCall) => void {
  return (call) => {
    const on = call.on.bind(call);
    let refused = false;
    call.on = (ev: string, fn: (...a: unknown[]) => void) => {
      if (ev !== 'data') return on(ev, fn);
      return on('data', (msg: unknown) => {
        if (refused) return;
        if (!(msg instanceof Refused)) return fn(msg);
        refused = true;
        o.onRefused?.(method, msg.details, call.getPeer());
        call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: msg.details });
      });
    };
    h(call);
  };
}

/** Problem with one string field, or null: empty (unless allowed), too long, or (for ids) outside the id alphabet. */
export function checkString(
  field: string,
  v: unknown,
  o: { maxChars: number; pattern?: RegExp; form?: string; optional?: boolean },
): string | null {
  if (typeof v !== 'string') return `${field} is missing`;
  if (v === '') return o.optional ? null : `${field} is empty`;
  if (v.length > o.maxChars) return `${field} ${quote(v)} is longer than ${o.maxChars} characters`;
  if (o.pattern && !o.pattern.test(v)) return `${field} ${quote(v)} must be ${o.form ?? 'well formed'}`;
  return null;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
const IPV6 = /^\[([0-9A-Fa-f:.]{2,45})\]$/;

/**
 * Why `endpoint` is not a host:port another process can dial, or null: the
 * port is 1–65535, an IPv4 address has four octets of 0–255, an IPv6
 * address is bracketed, and a name follows DNS's rules.
 */
export function endpointProblem(endpoint: string): string | null {
  if (endpoint.length > ENDPOINT_CHARS_MAX)
    return `endpoint ${quote(endpoint)} is longer than ${ENDPOINT_CHARS_MAX} characters`;
  const colon = endpoint.lastIndexOf(':');
  if (colon <= 0) return `endpoint ${quote(endpoint)} must be host:port`;
  const host = endpoint.slice(0, colon);
  const portText = endpoint.slice(colon + 1);
  if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65_535)
    return `endpoint ${quote(endpoint)} has port ${quote(portText)}: expected 1–65535`;
  const v4 = IPV4.exec(host);
  if (v4)
    return v4.slice(1).every((o) => Number(o) <= 255)
      ? null
      : `endpoint ${quote(endpoint)}: ${quote(host)} is not an IPv4 address (each part 0–255)`;
  if (IPV6.test(host))
    return host.slice(1, -1).includes(':')
      ? null
      : `endpoint ${quote(endpoint)}: ${quote(host)} is not an IPv6 address`;
  // A name made only of digits and dots would be read as a (bad) IPv4 address.
  if (/^[\d.]+$/.test(host) || !HOSTNAME.test(host))
    return `endpoint ${quote(endpoint)}: ${quote(host)} is not a host name or an IP address`;
  return null;
}

/** Why a request was refused at the edge: the label of verdict_requests_refused_total. */
export type RefusalClass = 'too_large' | 'undecodable' | 'invalid_field' | 'client_limit' | 'stream_backlog';
export const REFUSAL_CLASSES: readonly RefusalClass[] = [
  'too_large',
  'undecodable',
  'invalid_field',
  'client_limit',
  'stream_backlog',
];

/**
 * Refusal log lines per second and class at most: a client sending garbage fast must not fill the disk with the node's
 * log.
 */
const REFUSAL_LOG_LINES_PER_SECOND = 20;

/**
 * Counts of refusals since start (read by the metrics at scrape time), and the log lines about them, rate-limited per
 * class.
 */
export class Refusals {
  readonly counts = new Map<RefusalClass, number>(REFUSAL_CLASSES.map((c) => [c, 0]));
  private readonly windows = new Map<RefusalClass, { startAtMs: number; lines: number; suppressed: number }>();

  constructor(
    private readonly log: Logger | null = null,
    private readonly nowMs: () => number = Date.now,
  ) {}

  count(c: RefusalClass): void {
    this.counts.set(c, (this.counts.get(c) ?? 0) + 1);
  }

  /**
   * Counts the refusal and logs it at warn, unless this second's budget of lines for its class is spent (the next line
   * says how many were not logged).
   */
  refuse(c: RefusalClass, fields: Record<string, unknown>, details: string): void {
    this.count(c);
    if (this.log === null) return;
    const nowMs = this.nowMs();
    let w = this.windows.get(c);
    if (w === undefined) this.windows.set(c, (w = { startAtMs: nowMs, lines: 0, suppressed: 0 }));
    if (nowMs - w.startAtMs >= 1_000) {
      w.startAtMs = nowMs;
      w.lines = 0;
    }
    if (w.lines >= REFUSAL_LOG_LINES_PER_SECOND) {
      w.suppressed++;
      return;
    }
    w.lines++;
    const notLogged = w.suppressed;
    w.suppressed = 0;
    this.log.warn({ ...fields, refusal: c, ...(notLogged > 0 ? { refusalsNotLogged: notLogged } : {}) }, details);
  }
}
