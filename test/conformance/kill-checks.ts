// The conformance suite's kill -9 phase: transactions in every state, then
// SIGKILL right after a YES vote and a restart; then SIGKILL while the
// participant asks the cluster and during a PREPARE, and a second restart.
import * as grpc from '@grpc/grpc-js';
import type { Answer } from './driver.ts';
import {
  CHECKS,
  CheckFailure,
  type Phase,
  type Run,
  type Subject,
  ASK_WITHIN_MS,
  SETTLE_MS,
  eventually,
  expectCode,
  expectStatus,
  expectThat,
  expectVote,
  show,
  sleep,
} from './check-kit.ts';

/** kill -9 after YES votes, after decisions, while asking the cluster and during a PREPARE; two restarts. */
export async function killPhases(s: Subject, run: Run, wanted: (p: Phase) => boolean): Promise<void> {
  const { leader, cluster, env } = s;
  const C = CHECKS;
  const key = (t: string): string => `k-${t}`;
  // Before the first kill: transactions in every state.
  const toCommit = s.txn('kc'); // prepared; the cluster will say COMMITTED
  const toAbort = s.txn('ka'); // prepared; the cluster will say ABORTED (presumed abort)
  const committed = s.txn('kd'); // committed, then overwritten by a later transaction
  const aborted = s.txn('kab'); // prepared, then aborted
  const voteNo = s.txn('kno'); // voted NO, then asked Status (a durable refusal)
  const refused = s.txn('kref'); // asked Status before any PREPARE
  const held = s.txn('kh'); // prepared last: killed right after its YES, undecided through two restarts
  const setup: [string, Answer<unknown>, boolean][] = [];
  const ok = (what: string, a: Answer<unknown>, good: boolean): void => void setup.push([what, a, good]);
  for (const t of [toCommit, toAbort, committed, aborted]) {
    const v = await leader.prepare(t, s.write(key(t), t));
    ok(`PREPARE ${t}`, v, v.body?.vote === 'VOTE_YES');
  }
  ok('COMMIT', await leader.decide(committed, true), true);
  const later = s.txn('kd2');
  const lv = await leader.prepare(later, s.write(key(committed), 'overwritten'));
  ok('PREPARE of the overwrite', lv, lv.body?.vote === 'VOTE_YES');
  ok('COMMIT of the overwrite', await leader.decide(later, true), true);
  ok('ABORT', await leader.decide(aborted, false), true);
  const nv = await leader.prepare(voteNo, s.refuse());
  ok('PREPARE (NO)', nv, nv.body?.vote === 'VOTE_NO');
  const statusServed = (await leader.status(voteNo)).code === grpc.status.OK;
  if (statusServed) await leader.status(refused);
  const hv = await leader.prepare(held, s.write(key(held), held));
  const heldYes = hv.body?.vote === 'VOTE_YES';
  await s.kill();
  const setupProblem = setup.find(([, a, good]) => a.code !== grpc.status.OK || !good);
  const setupFailed = setupProblem
    ? `setting up the states before kill -9 failed: ${setupProblem[0]}: ${show(setupProblem[1])}`
    : null;
  cluster.outcomes.set(toCommit, 'OUTCOME_COMMITTED');
  cluster.outcomes.set(toAbort, 'OUTCOME_ABORTED');
  const restartedAtMs = Date.now();
  await s.start();

  if (wanted('registration')) {
    await run(C.registration.again, async () => {
      const rs = cluster.registrationsOf(env.participantId);
      expectThat(rs.length >= 2, `${rs.length} registration(s)`);
      expectThat(rs[rs.length - 1].endpoint === env.listen, `registered ${rs[rs.length - 1].endpoint}`);
    });
  }
  const askedSinceRestart = (t: string): boolean =>
    cluster.questionsAbout(t).some((q) => q.atMs >= restartedAtMs && q.participant_id === env.participantId);
  if (wanted('prepare')) {
    await run(C.prepare.durable, async () => {
      expectThat(heldYes, `the PREPARE before the kill: ${show(hv)}`);
      await eventually(
        `the restarted participant asks the cluster about ${held}, voted YES just before kill -9`,
        ASK_WITHIN_MS,
        async () => askedSinceRestart(held),
      );
    });
  }
  if (wanted('recovery')) {
    await run(C.recovery.restart, async () => {
      if (setupFailed) throw new CheckFailure(setupFailed);
      await eventually(`a question about ${toCommit} after the restart`, ASK_WITHIN_MS, async () =>
        askedSinceRestart(toCommit),
      );
      await s.expectValue(key(toCommit), toCommit, 'the COMMIT the cluster answered applied');
      expectCode(await leader.decide(toCommit, true), grpc.status.OK, 'its COMMIT delivered after the recovery');
    });
    await run(C.recovery.presumedAbort, async () => {
      if (setupFailed) throw new CheckFailure(setupFailed);
      await eventually(`a question about ${toAbort} after the restart`, ASK_WITHIN_MS, async () =>
        askedSinceRestart(toAbort),
      );
      // Released: a transaction writing the same key prepares and commits (a held lock would make it wait, then vote
      // NO).
      let last = '';
      await eventually(
        'the key of the aborted transaction is free again',
        SETTLE_MS,
        async () => {
          const t = s.txn('after-abort');
          const v = await leader.prepare(t, s.write(key(toAbort), 'free'), { timeout_ms: 2_000 });
          last = show(v);
          if (v.body?.vote !== 'VOTE_YES') return false;
          return (await leader.decide(t, true)).code === grpc.status.OK;
        },
        () => `(last PREPARE: ${last})`,
      );
      await s.expectValue(key(toAbort), 'free', 'the aborted write never applied');
      expectCode(await leader.decide(toAbort, false), grpc.status.OK, 'its ABORT delivered after the recovery');
    });
    await run(C.recovery.redelivered, async () => {
      if (setupFailed) throw new CheckFailure(setupFailed);
      expectCode(await leader.decide(committed, true), grpc.status.OK, 'the redelivered COMMIT');
      await s.expectValue(key(committed), 'overwritten', 'the redelivered COMMIT applied nothing again', 3_000);
    });
  }
  if (wanted('status')) {
    await run(C.status.restart, async () => {
      if (setupFailed) throw new CheckFailure(setupFailed);
      expectStatus(await leader.status(committed), ['TXN_STATUS_COMMITTED'], 'a committed transaction');
      expectStatus(await leader.status(aborted), ['TXN_STATUS_ABORTED'], 'an aborted transaction');
      expectCode(
        await leader.decide(aborted, true),
        grpc.status.FAILED_PRECONDITION,
        'a COMMIT of the aborted transaction',
      );
      expectStatus(await leader.status(held), ['TXN_STATUS_PREPARED'], 'a prepared transaction');
      for (const t of [voteNo, refused]) {
        expectStatus(
          await leader.status(t),
          ['TXN_STATUS_REFUSED', 'TXN_STATUS_ABORTED'],
          `a refused transaction (${t})`,
        );
        expectVote(await leader.prepare(t, s.write(key(t), 'v')), 'VOTE_NO', `a PREPARE of the refused ${t}`);
      }
    });
  }
  if (!wanted('recovery')) return;

  // The second kill: while the participant asks about `held` (the cluster keeps answering IN_PROGRESS), and during a
  // PREPARE.
  const midPrepare = s.txn('kmid');
  await eventually('questions about the held transaction', ASK_WITHIN_MS, async () => askedSinceRestart(held)).catch(
    () => {},
  );
  const inFlight = leader.prepare(midPrepare, s.write(key(midPrepare), midPrepare), {}, 3_000);
  await sleep(5);
  await s.kill();
  await inFlight;
  cluster.outcomes.set(held, 'OUTCOME_COMMITTED');
  cluster.outcomes.set(midPrepare, 'OUTCOME_ABORTED');
  const secondRestartAtMs = Date.now();
  await s.start();
  await run(C.recovery.whileAsking, async () => {
    expectThat(heldYes, `the PREPARE before the first kill: ${show(hv)}`);
    await eventually(`a question about ${held} after the second restart`, ASK_WITHIN_MS, async () =>
      cluster.questionsAbout(held).some((q) => q.atMs >= secondRestartAtMs),
    );
    await s.expectValue(key(held), held, 'the COMMIT the cluster answered applied');
    expectCode(await leader.decide(held, true), grpc.status.OK, 'its COMMIT delivered after the recovery');
  });
  await run(C.recovery.midPrepare, async () => {
    // Prepared or not when it died: either way the cluster's ABORT (or the participant's own refusal) ends it, and
    // nothing is applied.
    await eventually('the transaction killed mid-PREPARE ends aborted', SETTLE_MS, async () => {
      const t = s.txn('after-mid');
      const v = await leader.prepare(t, s.write(key(midPrepare), 'free'), { timeout_ms: 2_000 });
      if (v.body?.vote !== 'VOTE_YES') return false;
      return (await leader.decide(t, true)).code === grpc.status.OK;
    });
    await s.expectValue(key(midPrepare), 'free', 'the write of the killed PREPARE never applied');
    const d = await leader.decide(midPrepare, true);
    expectThat(
      d.code !== grpc.status.OK,
      'a COMMIT of the transaction killed mid-PREPARE (aborted by the cluster) was ACKed',
    );
  });
}
