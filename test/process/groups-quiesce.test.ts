// Idle groups quiesce on real processes (docs/operations.md, "Decision groups"): three node processes founded with
// four groups and left idle stop sending Raft messages once every group has quiesced (their heartbeats and answers
// alone would be 4 groups × 2 followers × 2 messages × 10 ticks = 160 a second), and a node that leads groups,
// killed with SIGKILL, loses every one of them to the others: each group elects a leader on a live node.

import { expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { Cluster, useProcessCleanup, waitFor } from './harness.ts';
import { scrape, value } from './ops-helpers.ts';

useProcessCleanup();

const GROUPS = 4;
/** Elections, the leaders' spreading (a hold-off of 3 s per hand-over) and a busy machine. */
const SETTLE_MS = 60_000;
/** Raft messages a second, the three nodes together, below which the idle cluster counts as quiet. */
const QUIET_MESSAGES_PER_S = 16;

/** Each group's leader as a client sees it ('' while a group has none). */
async function leaders(client: VerdictClient): Promise<string[] | undefined> {
  const s = await client.status({ callTimeoutMs: 2_000 }).catch(() => undefined);
  if (s === undefined || s.groups.length !== GROUPS) return undefined;
  return [...s.groups].sort((a, b) => a.group - b.group).map((g) => g.leaderId);
}

/** The groups quiesced on the node whose metrics are at `address` (verdict_group_quiesced summed over groups). */
async function quiescedGroups(address: string): Promise<number> {
  return (await scrape(address)).samples
    .filter((s) => s.name === 'verdict_group_quiesced')
    .reduce((n, s) => n + s.value, 0);
}

/** The Raft messages the nodes at `addresses` sent a second, over `windowMs`, every group together. */
async function messagesPerSecond(addresses: string[], windowMs: number): Promise<number> {
  const total = async (): Promise<number> => {
    let n = 0;
    for (const a of addresses) n += value((await scrape(a)).samples, 'verdict_raft_messages_sent_total');
    return n;
  };
  const before = await total();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, windowMs));
  const after = await total();
  return (after - before) / ((performance.now() - t0) / 1000);
}

it('an idle four-group cluster falls quiet (Raft messages a second near zero); a leader node killed with SIGKILL loses every group it led, and each elects again', async () => {
  const c = await Cluster.start({ nodes: 3, metrics: true, configExtra: () => ({ groups: GROUPS }) });
  const client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address), callTimeoutMs: 20_000 });
  try {
    await waitFor('every group has a leader', SETTLE_MS, async () => {
      const l = await leaders(client);
      return l?.every((id) => id !== '') ? l : undefined;
    });
    const addresses = c.nodes.map((n) => n.metricsAddress as string);
    const quiet = await waitFor('the idle cluster falls quiet (every group quiesced)', SETTLE_MS, async () => {
      const rate = await messagesPerSecond(addresses, 2_000);
      if (rate >= QUIET_MESSAGES_PER_S) return undefined;
      const quiesced = await Promise.all(addresses.map(quiescedGroups));
      return quiesced.every((n) => n === GROUPS) ? rate : undefined;
    });
    console.log(`groups quiesce: idle, ${quiet.toFixed(1)} Raft messages/s over the three nodes`);

    const before = (await leaders(client)) as string[];
    const victim = before[0];
    const led = before.flatMap((id, g) => (id === victim ? [g] : []));
    await c.node(victim).kill('SIGKILL');
    const killedAtMs = performance.now();
    const after = await waitFor(`every group led by a live node after ${victim} was killed`, 30_000, async () => {
      const l = await leaders(client);
      return l?.every((id) => id !== '' && id !== victim) ? l : undefined;
    });
    const tookMs = performance.now() - killedAtMs;
    console.log(
      `groups quiesce: ${victim} (leading groups ${led.join(', ')}) killed; every group led again in ${Math.round(tookMs)} ms: ${after.join(' ')}`,
    );
    expect(after.every((id) => id !== victim)).toBe(true);
  } catch (err) {
    c.printLogTails();
    throw err;
  } finally {
    await client.close();
  }
}, 180_000);
