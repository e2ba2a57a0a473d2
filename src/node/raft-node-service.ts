// The node's own API (service RaftNode): status, and put/get on the raw
// replicated log's key/value map. Used by `verdict status`, tests and the
// Raft benchmarks.

import * as grpc from '@grpc/grpc-js';
import type { GetRequest, GetResponse, NodeStatus, PutRequest, PutResponse, RaftNodeHandlers } from '../transport/proto.ts';
import type { NodeConfig } from './config.ts';
import { NotLeaderError, OverloadedError, type Driver } from './driver.ts';
import { encodePut, type NodeStateMachine } from './machine.ts';

/** How long a client request may wait for its entry to commit. */
export const REQUEST_TIMEOUT_MS = 10_000;

export function notLeader(cfg: NodeConfig, leader: string): grpc.ServiceError {
  const md = new grpc.Metadata();
  if (leader) {
    md.set('verdict-leader', leader);
    md.set('verdict-leader-address', cfg.peers.get(leader) ?? '');
  }
  const where = leader ? `the leader is ${leader} at ${cfg.peers.get(leader) ?? '?'}` : 'no leader is known yet; retry shortly';
  return Object.assign(new Error(`not the leader: ${where}`), { code: grpc.status.UNAVAILABLE, details: `not the leader: ${where}`, metadata: md });
}

export function toServiceError(cfg: NodeConfig, err: Error): grpc.ServiceError {
  if (err instanceof NotLeaderError) return notLeader(cfg, err.leader);
  const code = err instanceof OverloadedError ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.UNAVAILABLE;
  return Object.assign(new Error(err.message), { code, details: err.message, metadata: new grpc.Metadata() });
}

export function withTimeout<T>(what: string, start: (done: (err: Error | null, v?: T) => void) => void, cb: (err: Error | null, v?: T) => void): void {
  let finished = false;
  const timer = setTimeout(() => {
    if (finished) return;
    finished = true;
    cb(new Error(`${what} did not complete within ${REQUEST_TIMEOUT_MS} ms (no quorum?); retry`));
  }, REQUEST_TIMEOUT_MS);
  start((err, v) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    cb(err, v);
  });
}

export function raftNodeApi(cfg: NodeConfig, d: Driver<unknown>, sm: NodeStateMachine, address: string): RaftNodeHandlers {
  return {
    Status: (_call: grpc.ServerUnaryCall<unknown, NodeStatus>, cb: grpc.sendUnaryData<NodeStatus>) => {
      const s = d.node.status();
      cb(null, {
        clusterId: cfg.clusterId,
        nodeId: cfg.nodeId,
        address,
        role: s.softState.role,
        term: s.hardState.term,
        leaderId: s.softState.leader,
        commitIndex: s.hardState.commit,
        appliedIndex: s.applied,
        lastIndex: s.lastIndex,
        firstIndex: s.firstIndex,
        // Only the leader tracks replication progress; any other node lists
        // the members it was configured with, so that `verdict status` finds
        // the whole cluster from any one address.
        peers:
          s.progress.length > 0
            ? s.progress.map((p) => ({ nodeId: p.id, address: cfg.peers.get(p.id) ?? '', matchIndex: p.match, nextIndex: p.next, state: p.state }))
            : [...cfg.peers].map(([id, addr]) => ({ nodeId: id, address: addr, matchIndex: 0, nextIndex: 0, state: 'unknown' })),
      });
    },
    Put: (call: grpc.ServerUnaryCall<PutRequest, PutResponse>, cb: grpc.sendUnaryData<PutResponse>) => {
      const { key, value } = call.request;
      if (typeof key !== 'string' || key === '') return cb({ code: grpc.status.INVALID_ARGUMENT, details: 'key must be a non-empty string' });
      withTimeout<number>(
        `put ${key}`,
        (done) => d.propose(encodePut(key, value ?? new Uint8Array()), (err, r) => done(err, r?.index)),
        (err, index) => {
          if (err) return cb(toServiceError(cfg, err));
          cb(null, { index: index ?? 0, leaderId: cfg.nodeId, leaderAddress: address });
        },
      );
    },
    Get: (call: grpc.ServerUnaryCall<GetRequest, GetResponse>, cb: grpc.sendUnaryData<GetResponse>) => {
      const { key, linearizable } = call.request;
      const answer = (): void => {
        const v = sm.kv.get(key);
        cb(null, { found: v !== undefined, value: v ?? new Uint8Array(), appliedIndex: d.applied, leaderId: d.leader(), leaderAddress: cfg.peers.get(d.leader()) ?? '' });
      };
      if (!linearizable) return answer();
      withTimeout<number>(`read ${key}`, (done) => d.read(done), (err) => (err ? cb(toServiceError(cfg, err)) : answer()));
    },
  } as RaftNodeHandlers;
}
