// A node shutting down gracefully, before anything is closed: it stops
// taking new work (Begin and Commit are refused the way a follower refuses
// them, pointing at the node that leads or takes over), and a leader lets
// the commits already in PREPARE reach their decision, hands leadership to
// its most up-to-date follower and waits for it to take over, so clients see
// a leader change of a few ticks instead of an election timeout.

import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { NONE } from '../raft/types.ts';
import { sleep } from '../util/sleep.ts';
import type { NodeConfig } from './config.ts';
import type { NodeCore } from './core.ts';
import type { Driver } from './driver.ts';
import { shuttingDown, transferLeadership, transferWaitMs } from './raft-node-service.ts';

export class Handover {
  /** Set once the node drains: new work is refused. */
  private draining = false;
  /** The follower leadership is being handed to; '' before the transfer. */
  private handOffTo = '';
  /**
   * Set by `verdict cluster up` when it stops every node: a leader that cannot hand over is then expected, not a
   * problem.
   */
  private clusterStopping = false;

  constructor(
    private readonly cfg: NodeConfig,
    private readonly core: NodeCore,
    private readonly log: Logger,
  ) {}

  /** While draining: what Begin and Commit answer instead of taking new work; null otherwise. */
  refusal(): grpc.ServiceError | null {
    if (!this.draining) return null;
    const d = this.core.driver;
    return shuttingDown(this.core.membership, d.isLeader() ? this.handOffTo : d.leader());
  }

  expectClusterStop(): void {
    this.clusterStopping = true;
  }

  /**
   * Refuses new work from now on; a leader of more than one node then settles its commits and hands over. Never
   * rejects.
   */
  async drain(): Promise<void> {
    this.draining = true;
    if (this.core.driver.isLeader() && this.core.membership.size > 1) await this.handOff();
  }

  private async handOff(): Promise<void> {
    const { cfg, log } = this;
    const d = this.core.driver;
    const eng = this.core.engine;
    const waitMs = transferWaitMs(cfg);
    // Commits already in PREPARE or proposed get their answer from this leader
    // rather than an abort from the next one (R2); bounded by one election timeout.
    const settleBy = Date.now() + waitMs / 2;
    for (let p = eng.phases(); p.preparing + p.deciding > 0 && d.isLeader() && Date.now() < settleBy; p = eng.phases())
      await sleep(cfg.tickMs);
    if (!d.isLeader()) return;
    const to = this.bestFollower();
    if (to === NONE) {
      if (this.clusterStopping)
        log.info('the whole cluster is stopping; stopping as leader without a handover (expected)');
      else
        log.warn(
          'no follower to transfer leadership to; stopping as leader (the others elect one after an election timeout)',
        );
      return;
    }
    this.handOffTo = to;
    log.info({ to, term: d.node.raft.term }, 'transferring leadership before shutdown');
    const leader = await transferLeadership(cfg, d as Driver<unknown>, to, waitMs);
    if (leader !== '' && leader !== cfg.nodeId)
      log.info({ to: leader, term: d.node.raft.term }, `transferred leadership to ${leader}`);
    // When the launcher stops every node at once, the follower is stopping too: no handover is expected.
    else if (this.clusterStopping)
      log.info(
        { to, waitedMs: waitMs },
        'leadership transfer did not complete: the whole cluster is stopping (expected)',
      );
    else
      log.warn(
        { to, waitedMs: waitMs },
        'leadership transfer did not complete in time; stopping as leader (the others elect one after an election timeout)',
      );
  }

  /** The follower to hand leadership to: caught up (replicating), with the highest match index. */
  private bestFollower(): string {
    const members = this.core.membership;
    const others = this.core.driver.node
      .status()
      .progress.filter((p) => p.id !== this.cfg.nodeId && !p.learner && !p.rejoining && members.has(p.id));
    others.sort((a, b) => Number(b.state === 'replicate') - Number(a.state === 'replicate') || b.match - a.match);
    return others[0]?.id ?? NONE;
  }
}
