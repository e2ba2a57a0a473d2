// One outbox event on the wire: a JSON envelope, the same for every sink.
// The message id is the event id, stable across every republish, so a
// broker's dedup window and the inbox both recognise a repeat. `epoch` is
// the relay's lease epoch for the event's partition (fencing, docs/outbox.md).
// Bytes from a broker are hostile: decodeMessage checks every field.

export interface OutboxMessage {
  id: string;
  aggregate: string;
  /** Position of the event among its aggregate's committed events: 1, 2, 3, … in commit order. */
  seq: number;
  type: string;
  epoch: number;
  payload: unknown;
}

export const MESSAGE_BYTES_MAX = 1024 * 1024;
export const TEXT_CHARS_MAX = 200;

export class MessageError extends Error {
  override name = 'MessageError';
}

export function encodeMessage(m: OutboxMessage): Uint8Array {
  return Buffer.from(JSON.stringify(m), 'utf8');
}

const text = (v: unknown): boolean => typeof v === 'string' && v.length > 0 && v.length <= TEXT_CHARS_MAX;
const count = (v: unknown, min: number): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= min;

export function decodeMessage(bytes: Uint8Array): OutboxMessage {
  if (bytes.byteLength > MESSAGE_BYTES_MAX)
    throw new MessageError(`outbox message of ${bytes.byteLength} bytes exceeds ${MESSAGE_BYTES_MAX}`);
  let o: unknown;
  try {
    o = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (err) {
    throw new MessageError(`outbox message is not JSON: ${(err as Error).message}`);
  }
  const m = o as Record<string, unknown>;
  if (m === null || typeof m !== 'object' || Array.isArray(m))
    throw new MessageError('outbox message is not a JSON object');
  if (!text(m.id) || !text(m.aggregate) || !text(m.type) || !count(m.seq, 1) || !count(m.epoch, 0) || !('payload' in m))
    throw new MessageError(
      'outbox message needs id, aggregate, type (1–200 characters), seq (1 or more), epoch and payload',
    );
  return {
    id: m.id as string,
    aggregate: m.aggregate as string,
    seq: m.seq as number,
    type: m.type as string,
    epoch: m.epoch as number,
    payload: m.payload,
  };
}

/** The payload as JSON text, or a MessageError saying why it is not JSON. */
export function payloadJson(payload: unknown): string {
  let s: string | undefined;
  try {
    s = JSON.stringify(payload, (_k, v: unknown) => {
      if (typeof v === 'number' && !Number.isFinite(v))
        throw new MessageError(`payload holds ${v}, which JSON cannot carry`);
      return v;
    });
  } catch (err) {
    if (err instanceof MessageError) throw err;
    throw new MessageError(`payload is not JSON: ${(err as Error).message}`);
  }
  if (s === undefined) throw new MessageError(`payload is not JSON (${typeof payload})`);
  if (Buffer.byteLength(s) > MESSAGE_BYTES_MAX / 2)
    throw new MessageError(`payload of ${Buffer.byteLength(s)} bytes exceeds ${MESSAGE_BYTES_MAX / 2}`);
  return s;
}
