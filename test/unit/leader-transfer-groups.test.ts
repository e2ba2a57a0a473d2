// TransferLeader at G > 1 (issue 46): the node's own handler (raftNodeApi)
// served on a real gRPC server and called with RaftNodeClient, as
// transport.test.ts does for the wire. Each group's driver is a stand-in
// that says who leads it, so the test can put group 0 and group 1 on
// different nodes and see which group the request moved.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { NodeConfig } from '../../src/node/config.ts';
import type { HandOverResult } from '../../src/node/group-host.ts';
import { Membership } from '../../src/node/membership.ts';
import { raftNodeApi, type GroupLeadership } from '../../src/node/raft-node-service.ts';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import { Access } from '../../src/transport/auth.ts';
import { LEADER_ID_KEY } from '../../src/transport/coordinator-rpc.ts';
import { namedLeader } from '../../src/transport/leader-finder.ts';
import { raftNodeService } from '../../src/transport/proto.ts';

const PEERS = new Map([
  ['n1', '127.0.0.1:7001'],
  ['n2', '127.0.0.1:7002'],
  ['n3', '127.0.0.1:7003'],
]);
const CFG = { clusterId: 'c1', nodeId: 'n1', tickMs: 5, electionTicks: 10 } as NodeConfig;

/** A group's driver on n1 as TransferLeader reads it; a transfer it is asked for makes `to` lead at once. */
class GroupDriver {
  readonly transfers: string[] = [];
  readonly node: { raft: { term: number } };
  constructor(
    private leaderId: string,
    term: number,
  ) {
    this.node = { raft: { term } };
  }
  isLeader(): boolean {
    return this.leaderId === 'n1';
  }
  leader(): string {
    return this.leaderId;
  }
  transferLeadership(to: string): void {
    this.transfers.push(to);
    this.leaderId = to;
    this.node.raft.term += 1;
  }
}

const servers = new Set<grpc.Server>();
const clients = new Set<RaftNodeClient>();
afterEach(() => {
  for (const c of clients) c.close();
  for (const s of servers) s.forceShutdown();
  clients.clear();
  servers.clear();
});

/** n1's RaftNode service over `drivers` (group g's at index g), and a client of it. */
async function serveN1(
  drivers: GroupDriver[],
  handOvers: [string, boolean, number][],
  drained: HandOverResult = { outcome: 'transferred', inFlight: 0, drainedTicks: 0 },
): Promise<RaftNodeClient> {
  const groups: GroupLeadership[] = drivers.map((d) => ({
    members: new Membership('n1', PEERS, PEERS.get('n1') ?? ''),
    driver: d as unknown as GroupLeadership['driver'],
  }));
  const handOver = (to: string, force: boolean, group: number): Promise<HandOverResult> => {
    handOvers.push([to, force, group]);
    return Promise.resolve(drained);
  };
  const api = raftNodeApi(
    CFG,
    {} as never,
    groups[0].members,
    groups[0].driver,
    '127.0.0.1:7001',
    new Access(),
    handOver,
    groups,
  );
  const server = new grpc.Server();
  servers.add(server);
  server.addService(raftNodeService, api as grpc.UntypedServiceImplementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err !== null ? reject(err) : resolve(p),
    ),
  );
  const client = new RaftNodeClient(`127.0.0.1:${port}`);
  clients.add(client);
  return client;
}

describe('TransferLeader names a decision group', () => {
  it('refuses a group outside 0..G-1 with INVALID_ARGUMENT naming the range, and moves nothing', async () => {
    const drivers = [new GroupDriver('n1', 3), new GroupDriver('n1', 4)];
    const handOvers: [string, boolean, number][] = [];
    const client = await serveN1(drivers, handOvers);
    await expect(client.transferLeader({ to: 'n2', timeoutMs: 0, force: false, group: 2 })).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'group 2 does not exist: this cluster has 2 decision groups (0 to 1)',
    });
    expect(handOvers).toEqual([]);
    expect(drivers.map((d) => d.transfers)).toEqual([[], []]);
  });

  it("a node that leads group 0 but not group g answers not-the-leader naming g's leader, and moves nothing", async () => {
    const drivers = [new GroupDriver('n1', 3), new GroupDriver('n2', 4)];
    const handOvers: [string, boolean, number][] = [];
    const client = await serveN1(drivers, handOvers);
    const err = await client.transferLeader({ to: 'n3', timeoutMs: 0, force: false, group: 1 }).then(
      () => null,
      (e: grpc.ServiceError) => e,
    );
    expect(err?.code).toBe(grpc.status.UNAVAILABLE);
    expect(err?.details).toBe('not the leader of group 1: the leader is n2 at 127.0.0.1:7002');
    // What a caller follows: the group's leader, not group 0's (which is this node).
    expect(namedLeader(err)).toBe('127.0.0.1:7002');
    expect(err?.metadata.get(LEADER_ID_KEY)).toEqual(['n2']);
    expect(handOvers).toEqual([]);
    expect(drivers.map((d) => d.transfers)).toEqual([[], []]);
  });

  it("on g's leader, drains g and moves g's leadership only: group 0 stays", async () => {
    const drivers = [new GroupDriver('n2', 3), new GroupDriver('n1', 7)];
    const handOvers: [string, boolean, number][] = [];
    const client = await serveN1(drivers, handOvers);
    const r = await client.transferLeader({ to: 'n3', timeoutMs: 2_000, force: true, group: 1 });
    expect(r).toEqual({ leaderId: 'n3', term: 8, inFlight: 0 });
    expect(handOvers).toEqual([['n3', true, 1]]);
    expect(drivers.map((d) => d.transfers)).toEqual([[], ['n3']]);
    // Group 0 (led by n2) is not this node's to move: its refusal names group 0's leader.
    await expect(client.transferLeader({ to: 'n3', timeoutMs: 0, force: false, group: 0 })).rejects.toMatchObject({
      code: grpc.status.UNAVAILABLE,
      details: 'not the leader of group 0: the leader is n2 at 127.0.0.1:7002',
    });
    expect(drivers[0].transfers).toEqual([]);
  });

  it('a hand-over of g called off with transactions in flight refuses the move, naming g and how to force it', async () => {
    const drivers = [new GroupDriver('n2', 3), new GroupDriver('n1', 7)];
    const handOvers: [string, boolean, number][] = [];
    const client = await serveN1(drivers, handOvers, { outcome: 'in-flight', inFlight: 2, drainedTicks: 400 });
    const err = await client.transferLeader({ to: 'n3', timeoutMs: 0, force: false, group: 1 }).then(
      () => null,
      (e: grpc.ServiceError) => e,
    );
    expect(err?.code).toBe(grpc.status.UNAVAILABLE);
    expect(err?.details).toMatch(
      /^leadership of group 1 stays on n1: 2 transaction\(s\) were still in flight after 2000 ms .*\(verdict leader transfer --group 1 --force;/,
    );
    expect(handOvers).toEqual([['n3', false, 1]]);
    expect(drivers.map((d) => d.transfers)).toEqual([[], []]);
  });
});
