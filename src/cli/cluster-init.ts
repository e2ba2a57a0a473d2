// `verdict cluster init`: founding a new cluster, once, member by member.
//
// A node that finds no Raft state in its data directory does not vote or
// campaign until a leader has caught it up (it may be a voter whose disk was
// wiped: docs/storage.md, "A node with an empty data directory"). A cluster
// that never ran has no leader to do that, so its founding members are
// founded explicitly: run this once for each of them, with the node stopped,
// before its first start. It refuses when the node's own directory already
// holds Raft state, and when any peer named in the config answers with Raft
// state (a log): the cluster exists, and an empty node rejoins it by just
// starting. Peers that do not answer are taken as not started yet.
//
// The number of decision groups (docs/architecture.md, "Decision groups")
// is part of the founding: `--groups N` (or "groups" in the config; 1 by
// default) is recorded in the node's data directory beside the cluster id,
// and the node refuses to open it with another number.

import { loadConfig, type NodeConfig } from '../node/config.ts';
import { envName, OVERRIDABLE } from '../node/config-sources.ts';
import { loadNodeTls } from '../node/node-tls.ts';
import { groupsProblem } from '../domain/group.ts';
import { foundDataDir } from '../storage/founding.ts';
import { RaftNodeClient } from '../transport/admin.ts';
import type { NodeStatus } from '../transport/proto.ts';
import { flag, flagAll, UsageError } from './args.ts';

export const CLUSTER_INIT_HELP = `  verdict cluster init --config FILE [--groups N] [--set KEY=VALUE ...]
                                      found a new cluster: once per founding node, stopped, before its first start;
                                      refused if its data directory or any peer that answers holds Raft state.
                                      --groups: its number of decision groups (default: "groups" in the config, 1),
                                      fixed from then on; every node's config must say the same
                                      A node started on an empty data directory without it does not vote until a
                                      leader has caught it up (docs/storage.md)
`;

/** How long each peer has to answer whether it holds Raft state. */
const PEER_ASK_MS = 2_000;

export async function clusterInitCommand(args: string[]): Promise<void> {
  const file = flag(args, '--config');
  const groupsText = flag(args, '--groups');
  const sets = flagAll(args, '--set');
  if (args.length > 0)
    throw new UsageError(
      `unexpected argument "${args[0]}"; usage: verdict cluster init --config FILE [--groups N] [--set KEY=VALUE ...]`,
    );
  const fromEnv = Object.keys(OVERRIDABLE).some((k) => process.env[envName(k)] !== undefined);
  if (file === undefined && sets.length === 0 && !fromEnv)
    throw new UsageError('verdict cluster init needs --config FILE (the founding node’s own config)');
  const cfg = loadConfig(file, { env: process.env, sets });
  const groups = foundingGroups(groupsText, cfg.groups);
  if (cfg.join)
    throw new UsageError(
      `${cfg.nodeId} has "join": true: a node joining a running cluster needs no init; start it and run verdict member add`,
    );
  const answers = await askPeers(cfg);
  const holding = answers.filter(
    (a): a is PeerAnswer & { status: NodeStatus } => a.status !== null && holdsState(a.status),
  );
  if (holding.length > 0) {
    const list = holding
      .map((a) => `${a.id} at ${a.address} (term ${a.status.term}, log up to index ${a.status.lastIndex})`)
      .join(', ');
    throw new UsageError(
      `not founding: ${list} already hold${holding.length === 1 ? 's' : ''} Raft state, so cluster "${cfg.clusterId}" exists. Start ${cfg.nodeId} as it is: with an empty data directory it rejoins, and votes once a leader has caught it up (docs/storage.md)`,
    );
  }
  const other = answers.find((a) => a.status !== null && a.status.clusterId !== cfg.clusterId);
  if (other?.status)
    throw new UsageError(
      `not founding: ${other.id} at ${other.address} answers for cluster "${other.status.clusterId}", not "${cfg.clusterId}"; check "peers"`,
    );
  await foundDataDir(cfg.dataDir, { clusterId: cfg.clusterId, nodeId: cfg.nodeId }, groups);
  const silent = answers.filter((a) => a.status === null).map((a) => a.id);
  const groupsNote = groups === 1 ? '' : ` with ${groups} decision groups`;
  const configNote =
    groups === cfg.groups
      ? ''
      : ` (set "groups": ${groups} in its config first: a node refuses a directory founded with another number)`;
  process.stdout.write(
    `verdict: founded cluster "${cfg.clusterId}"${groupsNote} in ${cfg.dataDir} for ${cfg.nodeId}; start it with verdict node --config ${file ?? '…'}${configNote}` +
      (silent.length > 0
        ? `. Not answering (not started yet?): ${silent.join(', ')}; run verdict cluster init for each founding node before its first start`
        : '') +
      '\n',
  );
}

/** The founding's number of groups: --groups, or the config's; both given must agree. */
function foundingGroups(text: string | undefined, configured: number): number {
  if (text === undefined) return configured;
  const n = /^\d{1,3}$/.test(text) ? Number(text) : Number.NaN;
  const bad = groupsProblem(n);
  if (bad !== null) throw new UsageError(`--groups ${JSON.stringify(text)}: ${bad}`);
  if (configured !== 1 && configured !== n)
    throw new UsageError(
      `--groups ${n} but the config says "groups": ${configured}; give one number (the config's is what the node starts with)`,
    );
  return n;
}

interface PeerAnswer {
  id: string;
  address: string;
  /** Null: no answer within PEER_ASK_MS. */
  status: NodeStatus | null;
}

/**
 * A node that has a log (any leader ever appended to it) or a snapshot holds state; a founded or empty node that never
 * saw a leader does not.
 */
function holdsState(s: NodeStatus): boolean {
  return Number(s.lastIndex) > 0 || Number(s.commitIndex) > 0 || Number(s.firstIndex) > 1;
}

async function askPeers(cfg: NodeConfig): Promise<PeerAnswer[]> {
  const tls = loadNodeTls(cfg);
  const peers = [...cfg.peers].filter(([id]) => id !== cfg.nodeId);
  return Promise.all(
    peers.map(async ([id, address]) => {
      const client = new RaftNodeClient(cfg.peerDial.get(id) ?? address, tls?.peer(id));
      try {
        return { id, address, status: await client.status(PEER_ASK_MS) };
      } catch {
        return { id, address, status: null };
      } finally {
        client.close();
      }
    }),
  );
}
