// A participant learns which callers are nodes from a majority of its
// configured endpoints (src/participant/cluster-link.ts, members()): a
// process at a down node's address that names itself a node is outvoted.
import type * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterLink } from '../../src/participant/cluster-link.ts';
import type { NodeStatus } from '../../src/transport/proto.ts';
import { freePorts } from '../free-ports.ts';
import { statusServer } from './fixtures/status-server.ts';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((s) => s()));
});

function status(nodeId: string, peers: string[]): NodeStatus {
  return {
    clusterId: 'c1',
    nodeId,
    address: '',
    role: 'follower',
    term: 3,
    leaderId: '',
    commitIndex: 1,
    appliedIndex: 1,
    lastIndex: 1,
    firstIndex: 1,
    peers: peers.map((p) => ({ nodeId: p, address: '', matchIndex: 0, nextIndex: 0, state: 'probe' })),
    pid: 1,
    version: '',
    consoleUrl: '',
  };
}

async function serving(s: NodeStatus): Promise<string> {
  const handler: grpc.handleUnaryCall<unknown, NodeStatus> = (_call, cb) => cb(null, s);
  const { address, stop } = await statusServer(handler);
  stops.push(stop);
  return address;
}

describe("a participant's view of the cluster's nodes", () => {
  it('believes the list a majority of its endpoints give, not an impostor at a down node’s address', async () => {
    const n1 = await serving(status('n1', ['n2', 'n3']));
    const n2 = await serving(status('n2', ['n1', 'n3']));
    const impostor = await serving(status('evil', ['n1', 'n2']));
    for (const order of [
      [impostor, n1, n2],
      [n1, impostor, n2],
    ]) {
      const link = new ClusterLink({ clusterId: 'c1', endpoints: order, callTimeoutMs: 2_000 });
      try {
        expect(await link.members()).toEqual(['n1', 'n2', 'n3']);
      } finally {
        link.close();
      }
    }
  });

  it('believes nobody while only a minority answers, or the answers disagree', async () => {
    const impostor = await serving(status('evil', ['n1', 'n2']));
    const [down1, down2] = (await freePorts(2)).map((p) => `127.0.0.1:${p}`);
    const alone = new ClusterLink({ clusterId: 'c1', endpoints: [impostor, down1!, down2!], callTimeoutMs: 1_000 });
    try {
      await expect(alone.members()).rejects.toThrow(/fewer than a majority of the 3 configured endpoints answered/);
    } finally {
      alone.close();
    }
    const n1 = await serving(status('n1', ['n2', 'n3']));
    const split = new ClusterLink({ clusterId: 'c1', endpoints: [impostor, n1], callTimeoutMs: 1_000 });
    try {
      await expect(split.members()).rejects.toThrow(/do not agree on the cluster's nodes/);
    } finally {
      split.close();
    }
  });
});
