// The replicated decision table: the state machine that the Raft log feeds.
// Every node applies the same commands in the same order, so every node
// holds the same table. Pure and deterministic: time comes inside commands
// (the leader's clock when it proposed them), never from here.
//
// R1 lives here: the first Decide(T) applied wins; a later one is a no-op
// that returns the decision already made.

export type DecisionOutcome = 'commit' | 'abort';

export interface ParticipantRecord {
  id: string;
  endpoint: string;
  registeredAtMs: number;
}

export interface Decision {
  txnId: string;
  outcome: DecisionOutcome;
  reason: string;
  participants: string[];
  /** The log index where this decision was applied. */
  index: number;
  decidedAtMs: number;
}

export type Command =
  | { t: 'register'; id: string; endpoint: string; atMs: number }
  | { t: 'decide'; txnId: string; outcome: DecisionOutcome; reason: string; participants: string[]; atMs: number }
  | { t: 'forget'; txnIds: string[] };

export type ApplyResult =
  | { t: 'register'; participant: ParticipantRecord }
  | { t: 'decide'; decision: Decision; first: boolean }
  | { t: 'forget'; forgotten: number };

/** A forgotten decision still answers outcome queries for a while. */
export interface Tombstone {
  outcome: DecisionOutcome;
  reason: string;
  index: number;
}

export const TOMBSTONES_MAX = 100_000;

export class DecisionTable {
  readonly participants = new Map<string, ParticipantRecord>();
  /** Decisions not yet forgotten: COMMITs wait for every ACK (R5). */
  readonly decisions = new Map<string, Decision>();
  /** Forgotten decisions, oldest first, bounded; Map keeps insertion order. */
  readonly tombstones = new Map<string, Tombstone>();

  constructor(private readonly tombstonesMax = TOMBSTONES_MAX) {}

  apply(cmd: Command, index: number): ApplyResult {
    switch (cmd.t) {
      case 'register': {
        const p: ParticipantRecord = { id: cmd.id, endpoint: cmd.endpoint, registeredAtMs: this.participants.get(cmd.id)?.registeredAtMs ?? cmd.atMs };
        this.participants.set(cmd.id, p);
        return { t: 'register', participant: p };
      }
      case 'decide': {
        const existing = this.lookup(cmd.txnId);
        if (existing) return { t: 'decide', decision: existing, first: false };
        const d: Decision = { txnId: cmd.txnId, outcome: cmd.outcome, reason: cmd.reason, participants: cmd.participants, index, decidedAtMs: cmd.atMs };
        this.decisions.set(cmd.txnId, d);
        return { t: 'decide', decision: d, first: true };
      }
      case 'forget': {
        let n = 0;
        for (const id of cmd.txnIds) {
          const d = this.decisions.get(id);
          if (!d) continue;
          this.decisions.delete(id);
          this.bury(id, { outcome: d.outcome, reason: d.reason, index: d.index });
          n++;
        }
        return { t: 'forget', forgotten: n };
      }
    }
  }

  /** The decision for `txnId`, live or remembered by a tombstone. */
  lookup(txnId: string): Decision | null {
    const d = this.decisions.get(txnId);
    if (d) return d;
    const t = this.tombstones.get(txnId);
    if (t) return { txnId, outcome: t.outcome, reason: t.reason, participants: [], index: t.index, decidedAtMs: 0 };
    return null;
  }

  private bury(txnId: string, t: Tombstone): void {
    this.tombstones.set(txnId, t);
    while (this.tombstones.size > this.tombstonesMax) {
      const oldest = this.tombstones.keys().next().value as string;
      this.tombstones.delete(oldest);
    }
  }

  toJSON(): unknown {
    return { p: [...this.participants.values()], d: [...this.decisions.values()], t: [...this.tombstones] };
  }

  restoreFrom(json: unknown): void {
    const o = json as { p: ParticipantRecord[]; d: Decision[]; t: [string, Tombstone][] };
    this.participants.clear();
    this.decisions.clear();
    this.tombstones.clear();
    for (const p of o.p) this.participants.set(p.id, p);
    for (const d of o.d) this.decisions.set(d.txnId, d);
    for (const [k, v] of o.t) this.tombstones.set(k, v);
  }
}

const TAG_COMMAND = 0x02;

export function encodeCommand(cmd: Command): Uint8Array {
  const body = Buffer.from(JSON.stringify(cmd), 'utf8');
  const out = new Uint8Array(body.byteLength + 1);
  out[0] = TAG_COMMAND;
  out.set(body, 1);
  return out;
}

export function isCommand(data: Uint8Array): boolean {
  return data.byteLength > 0 && data[0] === TAG_COMMAND;
}

export function decodeCommand(data: Uint8Array): Command {
  return JSON.parse(Buffer.from(data.subarray(1)).toString('utf8')) as Command;
}
