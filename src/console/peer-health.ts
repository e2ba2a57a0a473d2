// The health of every other node as this one sees it, for the console's
// cluster page: each peer's RaftNode.Status, asked once a second with a
// short deadline over the same credentials Raft traffic uses. A peer that
// does not answer is shown down with the reason, and the page keeps working.
//
// Probing runs only while someone looks: the first list() starts it (and
// waits for one round when the rows are stale, so a single API call gets
// fresh rows), and it stops once nobody has asked for idleAfterMs: an idle
// node with a console open to no one asks its peers nothing.
import type * as grpc from '@grpc/grpc-js';
import { RaftNodeClient } from '../transport/admin.ts';
import { grpcErrorSentence } from './errors.ts';

export interface PeerHealthRow {
  id: string;
  address: string;
  up: boolean;
  /** When the last answer (up) or failure (down) came; 0 before the first probe. */
  checkedAtMs: number;
  /** When the peer last answered; 0 if never. */
  lastUpAtMs: number;
  role: string;
  term: number;
  leaderId: string;
  commitIndex: number;
  appliedIndex: number;
  lastIndex: number;
  /** The Verdict version the peer runs; '' from a node built before nodes reported it. */
  version: string;
  /** Where the peer's web console answers (its status says); '' when it serves none or has not said. */
  consoleUrl: string;
  /** Why the last probe failed; '' when up. */
  error: string;
  /** The gRPC code name of the last failure (e.g. "UNAVAILABLE"); '' when up. */
  code: string;
}

export interface PeerHealthTiming {
  /** How often peers are asked while someone looks (1,000 ms). */
  everyMs: number;
  /** The deadline of one Status call (900 ms). */
  callTimeoutMs: number;
  /** Probing stops once list() has not been called for this long (10,000 ms). */
  idleAfterMs: number;
}

const TIMING_DEFAULT: PeerHealthTiming = { everyMs: 1_000, callTimeoutMs: 900, idleAfterMs: 10_000 };

export class PeerHealth {
  private readonly rows = new Map<string, PeerHealthRow>();
  private readonly clients = new Map<string, { address: string; client: RaftNodeClient }>();
  private readonly timing: PeerHealthTiming;
  private timer: NodeJS.Timeout | null = null;
  private round: Promise<void> | null = null;
  private askedAtMs = 0;
  private probedAtMs = 0;
  private roundsBegun = 0;
  private closed = false;

  constructor(
    private readonly selfId: string,
    private readonly peers: () => ReadonlyMap<string, string>,
    private readonly credentials: (id: string) => grpc.ChannelCredentials | undefined,
    timing: Partial<PeerHealthTiming> = {},
  ) {
    this.timing = { ...TIMING_DEFAULT, ...timing };
  }

  /**
   * Every peer's row; starts probing if it was idle, and waits for a round when the rows are older than two periods.
   * After close(), the last rows.
   */
  async list(): Promise<PeerHealthRow[]> {
    if (this.closed) return this.snapshot();
    this.askedAtMs = Date.now();
    if (this.timer === null) {
      this.timer = setInterval(() => this.tick(), this.timing.everyMs);
      this.timer.unref();
    }
    if (Date.now() - this.probedAtMs > 2 * this.timing.everyMs) await this.probe();
    return this.snapshot();
  }

  /** Whether peers are being asked now (someone looked within idleAfterMs). */
  get active(): boolean {
    return this.timer !== null;
  }

  /** Rounds of probes begun since construction. */
  get rounds(): number {
    return this.roundsBegun;
  }

  private snapshot(): PeerHealthRow[] {
    const out: PeerHealthRow[] = [];
    for (const [id, address] of this.peers()) {
      if (id === this.selfId) continue;
      out.push(
        this.rows.get(id) ?? {
          id,
          address,
          up: false,
          checkedAtMs: 0,
          lastUpAtMs: 0,
          role: '',
          term: 0,
          leaderId: '',
          commitIndex: 0,
          appliedIndex: 0,
          lastIndex: 0,
          version: '',
          consoleUrl: '',
          error: 'not probed yet',
          code: '',
        },
      );
    }
    return out;
  }

  private clientFor(id: string, address: string): RaftNodeClient {
    const c = this.clients.get(id);
    if (c !== undefined && c.address === address) return c.client;
    c?.client.close();
    const client = new RaftNodeClient(address, this.credentials(id));
    this.clients.set(id, { address, client });
    return client;
  }

  private tick(): void {
    if (Date.now() - this.askedAtMs > this.timing.idleAfterMs) {
      this.stop();
      return;
    }
    void this.probe();
  }

  /** One round over every peer; a round already running is joined, not doubled. */
  private probe(): Promise<void> {
    this.round ??= this.probeAll().finally(() => {
      this.round = null;
      this.probedAtMs = Date.now();
    });
    return this.round;
  }

  private async probeAll(): Promise<void> {
    this.roundsBegun++;
    const peers = [...this.peers()].filter(([id]) => id !== this.selfId);
    for (const id of [...this.clients.keys()]) {
      if (peers.some(([p]) => p === id)) continue;
      this.clients.get(id)?.client.close();
      this.clients.delete(id);
      this.rows.delete(id);
    }
    await Promise.all(
      peers.map(async ([id, address]) => {
        const prev = this.rows.get(id);
        try {
          const s = await this.clientFor(id, address).status(this.timing.callTimeoutMs);
          const now = Date.now();
          this.rows.set(id, {
            id,
            address,
            up: true,
            checkedAtMs: now,
            lastUpAtMs: now,
            role: s.role,
            term: s.term,
            leaderId: s.leaderId,
            commitIndex: s.commitIndex,
            appliedIndex: s.appliedIndex,
            lastIndex: s.lastIndex,
            version: s.version,
            consoleUrl: s.consoleUrl,
            error: '',
            code: '',
          });
        } catch (err) {
          const e = err as grpc.ServiceError;
          const { code, sentence } = grpcErrorSentence(e, `node ${id}`);
          this.rows.set(id, {
            ...(prev ?? {
              role: '',
              term: 0,
              leaderId: '',
              commitIndex: 0,
              appliedIndex: 0,
              lastIndex: 0,
              version: '',
              consoleUrl: '',
              lastUpAtMs: 0,
            }),
            id,
            address,
            up: false,
            checkedAtMs: Date.now(),
            error: sentence,
            code,
          });
        }
      }),
    );
  }

  /**
   * Stops probing; the rows stay, with when each was checked. The
   * connections stay open (an idle HTTP/2 connection without keepalive
   * costs nothing), so the next look needs no handshake.
   */
  private stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  close(): void {
    this.closed = true;
    this.stop();
    for (const c of this.clients.values()) c.client.close();
    this.clients.clear();
  }
}
