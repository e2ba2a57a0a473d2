// A typed promise client for the node's admin/status API (service RaftNode),
// for the CLI and tests. The server side is implemented by the node against
// RaftNodeHandlers in proto.ts.
import * as grpc from '@grpc/grpc-js';
import { PutStreamClient } from './put-stream-client.ts';
import { unaryCall } from './unary.ts';
import {
  raftNodeService,
  type AddMemberRequest,
  type GetRequest,
  type ListMembersRequest,
  type Members,
  type RemoveMemberRequest,
  type GetResponse,
  type NodeStatus,
  type PutRequest,
  type PutResponse,
  type StatusRequest,
  type TransferLeaderRequest,
  type TransferLeaderResponse,
} from './proto.ts';

export const ADMIN_DEADLINE_MS = 5_000;

export class RaftNodeClient {
  private readonly client: grpc.Client;
  private puts: PutStreamClient | undefined;

  constructor(
    private readonly address: string,
    credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  ) {
    this.client = new grpc.Client(address, credentials);
  }

  status(deadlineMs = ADMIN_DEADLINE_MS): Promise<NodeStatus> {
    return this.unary<StatusRequest, NodeStatus>('Status', {}, deadlineMs);
  }

  put(req: PutRequest, deadlineMs = ADMIN_DEADLINE_MS): Promise<PutResponse> {
    return this.unary<PutRequest, PutResponse>('Put', req, deadlineMs);
  }

  /**
   * The same Put on this client's PutStream (opened on first use): the Puts
   * of one event-loop turn share a message, so many concurrent Puts cost one
   * stream rather than one unary call each. Same answers, same errors.
   */
  putStreamed(req: PutRequest, deadlineMs = ADMIN_DEADLINE_MS): Promise<PutResponse> {
    this.puts ??= new PutStreamClient(this.client, this.address);
    return this.puts.put(req, deadlineMs);
  }

  get(req: GetRequest, deadlineMs = ADMIN_DEADLINE_MS): Promise<GetResponse> {
    return this.unary<GetRequest, GetResponse>('Get', req, deadlineMs);
  }

  /** Asks the leader to hand leadership to `req.to`; resolves once `to` leads. */
  transferLeader(req: TransferLeaderRequest, deadlineMs = ADMIN_DEADLINE_MS): Promise<TransferLeaderResponse> {
    return this.unary<TransferLeaderRequest, TransferLeaderResponse>('TransferLeader', req, deadlineMs);
  }

  /** Adds a member (learner, then voter once caught up); served by the leader. */
  addMember(req: AddMemberRequest, deadlineMs = ADMIN_DEADLINE_MS): Promise<Members> {
    return this.unary<AddMemberRequest, Members>('AddMember', req, deadlineMs);
  }

  removeMember(req: RemoveMemberRequest, deadlineMs = ADMIN_DEADLINE_MS): Promise<Members> {
    return this.unary<RemoveMemberRequest, Members>('RemoveMember', req, deadlineMs);
  }

  listMembers(deadlineMs = ADMIN_DEADLINE_MS): Promise<Members> {
    return this.unary<ListMembersRequest, Members>('ListMembers', {}, deadlineMs);
  }

  close(): void {
    this.puts?.close();
    this.client.close();
  }

  private unary<Req, Res>(name: 'Status' | 'Put' | 'Get' | 'TransferLeader' | 'AddMember' | 'RemoveMember' | 'ListMembers', req: Req, deadlineMs: number): Promise<Res> {
    return unaryCall(this.client, raftNodeService[name] as grpc.MethodDefinition<Req, Res>, req, deadlineMs);
  }
}
