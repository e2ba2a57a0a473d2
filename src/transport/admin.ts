// A typed promise client for the node's admin/status API (service RaftNode),
// for the CLI and tests. The server side is implemented by the node against
// RaftNodeHandlers in proto.ts.
import * as grpc from '@grpc/grpc-js';
import { PutStreamClient } from './put-stream-client.ts';
import { unaryCall } from './unary.ts';
import {
  raftNodeService,
  type AddMemberRequest,
  type ListMembersRequest,
  type Members,
  type RemoveMemberRequest,
  type NodeStatus,
  type PutRequest,
  type PutResponse,
  type StatusRequest,
  type TransferLeaderRequest,
  type TransferLeaderResponse,
  type HistoryPageWire,
  type HistoryQueryWire,
} from './proto.ts';

export const ADMIN_TIMEOUT_MS = 5_000;

export class RaftNodeClient {
  private readonly client: grpc.Client;
  private puts: PutStreamClient | undefined;

  constructor(
    private readonly address: string,
    credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  ) {
    this.client = new grpc.Client(address, credentials);
  }

  status(timeoutMs = ADMIN_TIMEOUT_MS): Promise<NodeStatus> {
    return this.unary<StatusRequest, NodeStatus>('Status', {}, timeoutMs);
  }

  /** The log probe: one opaque entry through the log; resolves with the index it applied at. */
  put(req: PutRequest, timeoutMs = ADMIN_TIMEOUT_MS): Promise<PutResponse> {
    return this.unary<PutRequest, PutResponse>('Put', req, timeoutMs);
  }

  /**
   * The same Put on this client's PutStream (opened on first use): the Puts
   * of one event-loop turn share a message, so many concurrent Puts cost one
   * stream rather than one unary call each. Same answers, same errors.
   */
  putStreamed(req: PutRequest, timeoutMs = ADMIN_TIMEOUT_MS): Promise<PutResponse> {
    this.puts ??= new PutStreamClient(this.client, this.address);
    return this.puts.put(req, timeoutMs);
  }

  /** Asks the leader to hand leadership to `req.to`; resolves once `to` leads. */
  transferLeader(req: TransferLeaderRequest, timeoutMs = ADMIN_TIMEOUT_MS): Promise<TransferLeaderResponse> {
    return this.unary<TransferLeaderRequest, TransferLeaderResponse>('TransferLeader', req, timeoutMs);
  }

  /** Adds a member (learner, then voter once caught up); served by the leader. */
  addMember(req: AddMemberRequest, timeoutMs = ADMIN_TIMEOUT_MS): Promise<Members> {
    return this.unary<AddMemberRequest, Members>('AddMember', req, timeoutMs);
  }

  removeMember(req: RemoveMemberRequest, timeoutMs = ADMIN_TIMEOUT_MS): Promise<Members> {
    return this.unary<RemoveMemberRequest, Members>('RemoveMember', req, timeoutMs);
  }

  /** The voters and learners of decision group `group` (0: the operator's membership, which every group follows). */
  listMembers(timeoutMs = ADMIN_TIMEOUT_MS, group = 0): Promise<Members> {
    return this.unary<ListMembersRequest, Members>('ListMembers', { group }, timeoutMs);
  }

  /** This node's transaction history: one transaction (txnId) or a page newest first. */
  history(req: Partial<HistoryQueryWire>, timeoutMs = ADMIN_TIMEOUT_MS): Promise<HistoryPageWire> {
    return this.unary<Partial<HistoryQueryWire>, HistoryPageWire>('History', req, timeoutMs);
  }

  close(): void {
    this.puts?.close();
    this.client.close();
  }

  private unary<Req, Res>(
    name: 'Status' | 'Put' | 'TransferLeader' | 'AddMember' | 'RemoveMember' | 'ListMembers' | 'History',
    req: Req,
    timeoutMs: number,
  ): Promise<Res> {
    return unaryCall(this.client, raftNodeService[name] as grpc.MethodDefinition<Req, Res>, req, timeoutMs);
  }
}
