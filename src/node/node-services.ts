// The node's gRPC services on top of its core (src/node/core.ts): RaftNode
// (status, put/get, leader transfer, membership), Coordinator (with the
// lease calls) and Sagas. Every client-facing call is checked at the edge
// first (docs/limits.md): its size and encoding (src/transport/validate.ts),
// its fields and the client's share (./limits.ts).

import type { TxnTraces } from './txn-traces.ts';
import * as grpc from '@grpc/grpc-js';
import type { Access } from '../transport/auth.ts';
import { coordinatorService, type CoordinatorHandlers } from '../transport/coordinator-rpc.ts';
import { routeCoordinator, routeSagas } from './group-routing.ts';
import { raftNodeService } from '../transport/proto.ts';
import { sagasService } from '../transport/saga-rpc.ts';
import { gatedService, type ServiceGate } from '../transport/starting-gate.ts';
import { guardService, type EdgeOptions } from '../transport/validate.ts';
import { commitStreamHandler } from './commit-stream.ts';
import type { NodeConfig } from './config.ts';
import { coordinatorApi } from './coordinator-service.ts';
import type { NodeCore } from './core.ts';
import type { Driver } from './driver.ts';
import { leaseApi } from './lease-service.ts';
import { ClientQuota, RAFT_NODE_CHECKS, type Refusals, withClientLimits, withFieldChecks } from './limits.ts';
import { membershipApi } from './membership-service.ts';
import { historyApi } from './history-service.ts';
import type { GroupHistories } from './history-groups.ts';
import type { CommitAnswer } from './metrics.ts';
import { putStreamHandler } from './put-stream.ts';
import type { HandOverResult, HandOverWhy } from './group-host.ts';
import { raftNodeApi } from './raft-node-service.ts';
import type { SagaService } from './saga-service.ts';
import type { LeaseTable } from '../lease/state.ts';

/** The node's services, added when it binds and answering UNAVAILABLE until addNodeServices opens them. */
export interface NodeServiceGates {
  raftNode: ServiceGate<grpc.UntypedServiceImplementation>;
  coordinator: ServiceGate<grpc.UntypedServiceImplementation>;
  sagas: ServiceGate<grpc.UntypedServiceImplementation>;
}

/**
 * Adds RaftNode, Coordinator and Sagas to the bound server, closed: a caller is told to retry until the node has
 * recovered.
 */
export function addStartingGates(server: grpc.Server, requestBytesMax: number): NodeServiceGates {
  const gate = (d: grpc.ServiceDefinition): ServiceGate<grpc.UntypedServiceImplementation> =>
    gatedService(server, d as grpc.ServiceDefinition<grpc.UntypedServiceImplementation>, requestBytesMax);
  return { raftNode: gate(raftNodeService), coordinator: gate(coordinatorService), sagas: gate(sagasService) };
}

export interface NodeServicesOptions {
  cfg: NodeConfig;
  /** Where the services go: the gates added at bind time. */
  gates: NodeServiceGates;
  core: NodeCore;
  /** The node's transaction history over its decision groups (./history-groups.ts); null when turned off. */
  history: GroupHistories | null;
  /** host:port this node serves on. */
  address: string;
  /** Who may do what (src/transport/auth.ts). */
  access: Access;
  refusals: Refusals;
  sagas: SagaService;
  /** The lease table beside the decision table (./products.ts). */
  leases: LeaseTable;
  /** Non-null while the node shuts down: what Begin and Commit answer instead of taking new work. */
  refusal: () => grpc.ServiceError | null;
  /** The leader's connection to a participant endpoint; '' when unknown. */
  connection: (endpoint: string) => string;
  /** Each transaction's trace context (./txn-traces.ts); absent: calls are not traced. */
  traces?: TxnTraces;
  observeCommit: (seconds: number, answer: CommitAnswer) => void;
  /**
   * A hand-over of a decision group, group 0 unless named (`verdict leader transfer [--group G]`; a leader that
   * `member remove` removes): the group host's, which refuses new transactions and waits for those in flight first
   * (./group-host.ts). Absent: the transfer starts at once.
   */
  handOver?: (to: string, force: boolean, why?: HandOverWhy, group?: number) => Promise<HandOverResult>;
  /**
   * The replicas of decision groups 1.. (docs/architecture.md, "Decision
   * groups"); group 0's are `core`, `sagas`, `leases`, `traces` and
   * `refusal`. Absent or empty: a cluster of one group, served as ever.
   */
  otherGroups?: readonly GroupServices[];
}

/** What the services need of one decision group's replica. */
export interface GroupServices {
  core: NodeCore;
  sagas: SagaService;
  leases: LeaseTable;
  traces?: TxnTraces;
  refusal: () => grpc.ServiceError | null;
}

/** Opens the gates onto the services; endAll() ends the clients' open Commit and Put streams (at shutdown). */
export function addNodeServices(o: NodeServicesOptions): { endAll(): void } {
  const { cfg, address, access, refusals, handOver } = o;
  const d = o.core.driver as Driver<unknown>;
  const machine = o.core.machine;
  const members = o.core.membership;
  const edge: EdgeOptions = {
    requestBytesMax: cfg.requestBytesMax,
    onRefused: (method, details, peer) =>
      refusals.refuse(
        /exceeds the limit/.test(details) ? 'too_large' : 'undecodable',
        { method, peer },
        `request refused: ${details}`,
      ),
  };
  // Every group's members and driver, group 0's first: what TransferLeader and ListMembers read for the group named.
  const groupViews = [
    { members, driver: d },
    ...(o.otherGroups ?? []).map((g) => ({ members: g.core.membership, driver: g.core.driver as Driver<unknown> })),
  ];
  const raftNodeChecked = withFieldChecks(
    {
      ...raftNodeApi(
        cfg,
        o.core,
        members,
        d,
        address,
        access,
        handOver && ((to, force, group) => handOver(to, force, 'operator', group)),
        groupViews,
      ),
      ...membershipApi(
        cfg,
        members,
        d,
        access,
        (id) => machine.table.participants.has(id),
        groupViews,
        handOver && ((to) => handOver(to, true, 'members')),
      ),
      ...historyApi(cfg.nodeId, o.history, access),
    },
    RAFT_NODE_CHECKS,
    refusals,
  );
  // PutStream runs every streamed Put through the checked unary Put handler.
  const putStreams = putStreamHandler(raftNodeChecked.Put, {
    unreadMax: cfg.streamUnreadMax,
    access,
    onCutOff: (peer, details) => refusals.refuse('stream_backlog', { peer }, `put stream cut off: ${details}`),
  });
  const raftNode = guardService(raftNodeService, { ...raftNodeChecked, PutStream: putStreams.handler }, edge);
  o.gates.raftNode.open(raftNode.implementation);
  // Each group's handlers are a node of one group's; with more groups, ./group-routing.ts puts them behind one door.
  const groupCoordinator = (g: GroupServices): CoordinatorHandlers => {
    const quota = new ClientQuota({ clientInFlightMax: cfg.clientInFlightMax }, g.core.engine, cfg.inFlightMax);
    const groupMembers = g.core.membership;
    return withClientLimits(
      {
        ...coordinatorApi({
          cfg,
          members: groupMembers,
          driver: g.core.driver as Driver<unknown>,
          core: g.core,
          engine: g.core.engine,
          table: g.core.machine.table,
          address,
          access,
          metrics: { observeCommit: o.observeCommit },
          refusal: g.refusal,
          connection: o.connection,
          traces: g.traces,
        }),
        ...leaseApi({ members: groupMembers, core: g.core, leases: g.leases, nowMs: () => Date.now() }),
      },
      {
        quota,
        refusals,
        nowMs: () => Date.now(),
      },
    );
  };
  const groups: GroupServices[] = [
    { core: o.core, sagas: o.sagas, leases: o.leases, traces: o.traces, refusal: o.refusal },
    ...(o.otherGroups ?? []),
  ];
  const coordinator =
    groups.length === 1
      ? groupCoordinator(groups[0])
      : routeCoordinator(groups.map(groupCoordinator), (g, id) => groups[g].core.machine.table.participants.has(id));
  // CommitStream runs every streamed Commit through the unary Commit handler.
  const commitStreams = commitStreamHandler(coordinator.Commit, {
    unreadMax: cfg.streamUnreadMax,
    onCutOff: (peer, details) => refusals.refuse('stream_backlog', { peer }, `commit stream cut off: ${details}`),
  });
  const coordinatorEdge = guardService(
    coordinatorService,
    { ...coordinator, CommitStream: commitStreams.handler },
    edge,
  );
  o.gates.coordinator.open(coordinatorEdge.implementation);
  const sagasEdge = guardService(
    sagasService,
    groups.length === 1 ? o.sagas.handlers : routeSagas(groups.map((g) => g.sagas.handlers)),
    edge,
  );
  o.gates.sagas.open(sagasEdge.implementation);
  return {
    endAll: () => {
      commitStreams.endAll();
      putStreams.endAll();
    },
  };
}
