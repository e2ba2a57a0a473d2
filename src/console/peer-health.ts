// The health of every other node as this one sees it, for the console's
// cluster page: each peer's RaftNode.Status, asked once a second with a
// short deadline over the same credentials Raft traffic uses. A peer that
// does not answer is shown down with the reason, and the page keeps working.
import type * as grpc from '@grpc/grpc-js';
import { RaftNodeClient } from '../transport/admin.ts';

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
  /** Why the last probe failed; '' when up. */
  error: string;
}

const PROBE_EVERY_MS = 1_000;
const PROBE_DEADLINE_MS = 900;

export class PeerHealth {
  private readonly rows = new Map<string, PeerHealthRow>();
  private readonly clients = new Map<string, { address: string; client: RaftNodeClient }>();
  private readonly timer: NodeJS.Timeout;
  private probing = false;

  constructor(
    private readonly selfId: string,
    private readonly peers: () => ReadonlyMap<string, string>,
    private readonly credentials: (id: string) => grpc.ChannelCredentials | undefined,
  ) {
    this.timer = setInterval(() => void this.probe(), PROBE_EVERY_MS);
    this.timer.unref();
  }

  list(): PeerHealthRow[] {
    const out: PeerHealthRow[] = [];
    for (const [id, address] of this.peers()) {
      if (id === this.selfId) continue;
      out.push(this.rows.get(id) ?? { id, address, up: false, checkedAtMs: 0, lastUpAtMs: 0, role: '', term: 0, leaderId: '', commitIndex: 0, appliedIndex: 0, lastIndex: 0, error: 'not probed yet' });
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

  private async probe(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
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
            const s = await this.clientFor(id, address).status(PROBE_DEADLINE_MS);
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
              error: '',
            });
          } catch (err) {
            const e = err as grpc.ServiceError;
            const why = (e.details || e.message || String(err)).replace(/\s+/g, ' ').slice(0, 200);
            this.rows.set(id, {
              ...(prev ?? { role: '', term: 0, leaderId: '', commitIndex: 0, appliedIndex: 0, lastIndex: 0, lastUpAtMs: 0 }),
              id,
              address,
              up: false,
              checkedAtMs: Date.now(),
              error: why,
            });
          }
        }),
      );
    } finally {
      this.probing = false;
    }
  }

  close(): void {
    clearInterval(this.timer);
    for (const c of this.clients.values()) c.client.close();
    this.clients.clear();
  }
}
