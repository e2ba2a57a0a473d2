// The raw-log clients of bench/harness/loadgen.ts (Verdict's and etcd's), in a module of their own so a test
// can drive them (loadgen.ts runs its load when imported).
import type * as grpc from '@grpc/grpc-js';
import { RaftNodeClient } from '../../src/transport/admin.ts';
import { LEADER_ADDRESS_KEY } from '../../src/transport/coordinator-rpc.ts';
import { EtcdKv } from './etcd.ts';

export interface RawPut {
  put(key: string, value: Uint8Array): Promise<unknown>;
  close(): void;
}

/**
 * Verdict's raw log: every worker's Puts on one PutStream to the leader, the
 * Puts of one turn in one message. A node that is not the leader (any more)
 * answers UNAVAILABLE naming the leader's address; later Puts go there, as a
 * client of the log would send them. The Put that heard it counts as an
 * error, and the bench counts the leader change.
 */
export function verdictPut(leader: string): RawPut {
  let address = leader;
  let c = new RaftNodeClient(address);
  const follow = (err: unknown): never => {
    const hint = (err as grpc.ServiceError).metadata?.get(LEADER_ADDRESS_KEY)[0];
    if (typeof hint === 'string' && hint !== '' && hint !== address) {
      const old = c;
      address = hint;
      c = new RaftNodeClient(address);
      old.close();
    }
    throw err;
  };
  return { put: (key, value) => c.putStreamed({ key, value }, 5_000).catch(follow), close: () => c.close() };
}

/** The etcd anchor: etcd's own unary KV.Put on one gRPC channel, as its clients send them. */
export function etcdPut(leader: string): RawPut {
  const c = new EtcdKv(leader);
  return { put: (key, value) => c.put(key, value, 5_000), close: () => c.close() };
}
