// The SDK's side of Coordinator.CommitStream: the Commits sent to one node
// ride one long-lived bidi stream, in batches (one per event-loop turn),
// instead of one unary call each.
//
// It stands in for one unary attempt and nothing more: each Commit has its
// own deadline (checked by one sweep timer), and it settles with the
// TxnOutcome or with a grpc.ServiceError shaped as the unary call's would
// be, leader hint in the metadata included, so CoordinatorConnection's
// retry and redirect logic (and R2's rule about `begin` on a retry) is the
// same for both. A broken stream fails the Commits whose answers it owed
// with UNAVAILABLE: their fate is unknown, exactly as for a unary call cut
// off mid-way. A node that answers UNIMPLEMENTED (an older build) gets
// unary Commits from then on; such a node also ignores CommitRequest.begin,
// so a Commit that must begin the transaction is preceded there by a Begin
// call (otherwise the old node would abort it as not begun, R2).
import * as grpc from '@grpc/grpc-js';
import { commitStreamMethod, coordinatorService, LEADER_ADDRESS_KEY, LEADER_ID_KEY, type CommitRequest, type StreamedCommit, type StreamedCommits, type StreamedOutcome, type StreamedOutcomes, type TxnOutcome } from '../transport/coordinator-rpc.ts';
import { unaryCall } from '../transport/unary.ts';

/** Commits waiting for an answer on one stream; beyond this one fails at once with RESOURCE_EXHAUSTED (retried elsewhere). */
export const COMMIT_STREAM_PENDING_MAX = 16_384;
const SWEEP_MS = 25;

interface Pending {
  request: CommitRequest;
  deadlineAtMs: number;
  resolve: (o: TxnOutcome) => void;
  reject: (err: grpc.ServiceError) => void;
}

function serviceError(code: grpc.status, details: string, metadata = new grpc.Metadata()): grpc.ServiceError {
  return Object.assign(new Error(`${code} ${grpc.status[code]}: ${details}`), { code, details, metadata });
}

export class CommitStream {
  private unaryOnly = false;
  private call: grpc.ClientDuplexStream<StreamedCommits, StreamedOutcomes> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Written at the end of this turn; each is also in pending (unless its deadline passed first). */
  private outbox: StreamedCommit[] = [];
  private flushScheduled = false;
  private sweepTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly client: grpc.Client,
    private readonly address: string,
  ) {}

  commit(request: CommitRequest, deadlineMs: number): Promise<TxnOutcome> {
    if (this.closed) return Promise.reject(serviceError(grpc.status.CANCELLED, 'the connection is closed'));
    if (this.unaryOnly) return this.unary(request, deadlineMs);
    if (this.pending.size >= COMMIT_STREAM_PENDING_MAX) return Promise.reject(serviceError(grpc.status.RESOURCE_EXHAUSTED, `${this.pending.size} commits to ${this.address} wait for an answer`));
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { request, deadlineAtMs: Date.now() + deadlineMs, resolve, reject });
      this.outbox.push({ id, commit: request });
      if (this.sweepTimer === null) {
        this.sweepTimer = setInterval(() => this.sweep(), SWEEP_MS);
        this.sweepTimer.unref();
      }
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopSweep();
    this.outbox = [];
    const call = this.call;
    this.call = null;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const p of waiting) p.reject(serviceError(grpc.status.CANCELLED, 'the connection is closed'));
    call?.cancel();
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.closed || this.unaryOnly || this.outbox.length === 0) return;
    const commits = this.outbox.filter((c) => this.pending.has(c.id));
    this.outbox = [];
    if (commits.length === 0) return;
    (this.call ?? this.open()).write({ commits });
  }

  private open(): grpc.ClientDuplexStream<StreamedCommits, StreamedOutcomes> {
    const m = commitStreamMethod;
    const call = this.client.makeBidiStreamRequest<StreamedCommits, StreamedOutcomes>(m.path, m.requestSerialize, m.responseDeserialize, new grpc.Metadata());
    this.call = call;
    call.on('data', (batch: StreamedOutcomes) => {
      for (const a of batch.outcomes) this.answer(a);
    });
    call.on('error', () => {});
    call.on('status', (st: grpc.StatusObject) => this.onEnd(call, st));
    return call;
  }

  private answer(a: StreamedOutcome): void {
    const p = this.pending.get(a.id);
    if (p === undefined) return;
    this.pending.delete(a.id);
    if (a.code === 0 && a.outcome) return p.resolve(a.outcome);
    const md = new grpc.Metadata();
    if (a.leaderAddress !== '') md.set(LEADER_ADDRESS_KEY, a.leaderAddress);
    if (a.leaderId !== '') md.set(LEADER_ID_KEY, a.leaderId);
    p.reject(serviceError(a.code === 0 ? grpc.status.INTERNAL : a.code, a.code === 0 ? 'the node answered a streamed Commit without an outcome' : a.details, md));
  }

  private onEnd(call: grpc.ClientDuplexStream<StreamedCommits, StreamedOutcomes>, st: grpc.StatusObject): void {
    if (call !== this.call) return;
    this.call = null;
    const unsent = new Set(this.outbox.map((c) => c.id));
    if (st.code === grpc.status.UNIMPLEMENTED) {
      this.unaryOnly = true;
      this.stopSweep();
      this.outbox = [];
      const waiting = [...this.pending.values()];
      this.pending.clear();
      const now = Date.now();
      for (const p of waiting) this.unary(p.request, Math.max(1, p.deadlineAtMs - now)).then(p.resolve, p.reject);
      return;
    }
    const err = serviceError(grpc.status.UNAVAILABLE, `the commit stream to ${this.address} ended: ${st.code === grpc.status.OK ? 'closed by the node' : st.details}`);
    for (const [id, p] of this.pending) {
      if (unsent.has(id)) continue;
      this.pending.delete(id);
      p.reject(err);
    }
    if (this.outbox.length > 0 && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private async unary(request: CommitRequest, deadlineMs: number): Promise<TxnOutcome> {
    if (request.begin === true) {
      const startedAt = Date.now();
      await unaryCall(this.client, coordinatorService.Begin, { txnId: request.txnId, timeoutMs: request.timeoutMs ?? 0 }, deadlineMs);
      deadlineMs = Math.max(1, deadlineMs - (Date.now() - startedAt));
    }
    return unaryCall(this.client, coordinatorService.Commit, request, deadlineMs);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [id, p] of this.pending) {
      if (now < p.deadlineAtMs) continue;
      this.pending.delete(id);
      p.reject(serviceError(grpc.status.DEADLINE_EXCEEDED, `no answer from ${this.address} in time`));
    }
    if (this.pending.size === 0) this.stopSweep();
  }

  private stopSweep(): void {
    if (this.sweepTimer !== null) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
  }
}
