// `verdict member add|remove|list`: membership changes through the leader's
// node API (RaftNode.AddMember / RemoveMember / ListMembers). The leader is
// found by following redirects from any endpoint (onLeader in status.ts).

import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { RaftNodeClient } from '../transport/admin.ts';
import type { Members } from '../transport/proto.ts';
import { bool, flag, UsageError } from './args.ts';
import { commandTimeoutMs } from './reach.ts';
import { onLeader } from './leader-calls.ts';
import { endpoints } from './status.ts';
import { ID } from '../domain/id.ts';

export const MEMBER_HELP = `  verdict member list [--group G] [--json] [--endpoints ...]
                                      the voters and learners, their addresses and replication progress
                                      (of decision group G, default 0: the one add and remove change and
                                      every other group follows)
  verdict member add ID ADDRESS [--timeout-ms N] [--json] [--endpoints ...]
                                      add node ID (started with "join": true and an empty data dir, listening
                                      at ADDRESS) as a learner, wait until it caught up (default 60 s), promote it
  verdict member remove ID [--json] [--endpoints ...]
                                      remove a voter or learner; a leader hands leadership over first
`;

const ADDRESS = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

class MemberCommandError extends Error {}

/** Runs `f` on the leader; errors other than "not the leader / unavailable" end at once, with the node's reason. */
async function leaderCall(addrs: string[], f: (c: RaftNodeClient) => Promise<Members>): Promise<Members> {
  const r = await onLeader(addrs, async (c) => {
    try {
      return { ok: await f(c), err: undefined };
    } catch (err) {
      const e = err as ServiceError;
      if (e.code === grpcStatus.UNAVAILABLE) throw err;
      return { ok: undefined, err: e };
    }
  });
  if (r.err !== undefined) throw new MemberCommandError(r.err.details || r.err.message);
  return r.ok as Members;
}

function print(m: Members, json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(m, null, 2) + '\n');
    return;
  }
  const rows = [['NODE', 'ADDRESS', 'ROLE', 'MATCH', 'STATE']];
  for (const x of m.members) {
    const role = (x.voter ? 'voter' : 'learner') + (x.nodeId === m.leaderId ? ' (leader)' : '');
    rows.push([x.nodeId, x.address || '?', role, x.state ? String(x.matchIndex) : '', x.state]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  process.stdout.write(`leader: ${m.leaderId || 'none'} (term ${m.term})\n`);
  for (const r of rows)
    process.stdout.write(
      r
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd() + '\n',
    );
}

export async function memberCommand(args: string[]): Promise<void> {
  const sub = args.shift();
  const json = bool(args, '--json');
  const addrs = endpoints(args);
  try {
    switch (sub) {
      case 'list': {
        const groupText = flag(args, '--group');
        const group = groupText === undefined ? 0 : Number(groupText);
        if (!Number.isSafeInteger(group) || group < 0 || !/^\d+$/.test(groupText ?? '0'))
          throw new UsageError(`--group ${groupText}: expected a decision group number (0, 1, ...)`);
        if (args.length > 0)
          throw new UsageError(`unexpected argument "${args[0]}"; usage: verdict member list [--group G] [--json]`);
        let m = await leaderCall(addrs, (c) => c.listMembers(undefined, group));
        // Any node answers, from what it applied; one that names no leader may be cut off, or removed and never told
        // (it keeps the configuration it last applied): the next endpoint that names one answers instead.
        for (const addr of addrs) {
          if (m.leaderId !== '') break;
          const other = await leaderCall([addr], (c) => c.listMembers(undefined, group)).catch(() => undefined);
          if (other !== undefined && other.leaderId !== '') m = other;
        }
        // Only the group's leader knows replication progress.
        const leader = m.members.find((x) => x.nodeId === m.leaderId);
        if (leader?.address && !m.members.some((x) => x.state !== ''))
          m = await onLeader([leader.address], (c) => c.listMembers(undefined, group)).catch(() => m);
        return print(m, json);
      }
      case 'add': {
        // How long to wait for the new node to catch up: --timeout-ms, or the node's default (0: 60 s).
        const timeoutMs = commandTimeoutMs() ?? 0;
        const [id, address, extra] = args;
        if (id === undefined || address === undefined)
          throw new UsageError('usage: verdict member add ID ADDRESS [--timeout-ms N] [--json]');
        if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
        if (!ID.test(id))
          throw new UsageError(`node id "${id}" is invalid: expected letters, digits, ".", "_" or "-" (at most 64)`);
        if (!ADDRESS.test(address))
          throw new UsageError(`address "${address}" is invalid: expected host:port where the new node listens`);
        const m = await leaderCall(addrs, (c) =>
          c.addMember({ nodeId: id, address, timeoutMs }, (timeoutMs || 60_000) + 15_000),
        );
        return print(m, json);
      }
      case 'remove': {
        const [id, extra] = args;
        if (id === undefined) throw new UsageError('usage: verdict member remove ID [--json]');
        if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
        if (!ID.test(id)) throw new UsageError(`node id "${id}" is invalid`);
        const m = await leaderCall(addrs, (c) => c.removeMember({ nodeId: id }, 30_000));
        return print(m, json);
      }
      default:
        throw new UsageError(`usage:\n${MEMBER_HELP}`);
    }
  } catch (err) {
    if (!(err instanceof MemberCommandError)) throw err;
    process.stderr.write(`verdict: member ${sub} failed: ${err.message}\n`);
    process.exitCode = 1;
  }
}
