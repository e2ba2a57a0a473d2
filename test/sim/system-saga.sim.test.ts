// Sagas in the whole-system simulation, part 1 of 2: shard 1 of the seeded
// fault schedules (sagas beside commits), and a replayed schedule
// (VERDICT_SAGA_REPLAY). Part 2 (system-saga-shard2.sim.test.ts) runs shard 2
// and the checker's teeth. Each shard prints one line `saga: seeds=N ... violations=V`.

import { expect, test } from 'vitest';
import { runSagaShard, SAGA_REPLAY, SAGA_SEEDS } from './system-saga-run.ts';

test(`sagas end FINISHED or COMPENSATED, each effect once, on ${SAGA_REPLAY ? 'a replayed schedule' : `shard 1 of ${SAGA_SEEDS} simulated fault schedules`}`, () => {
  const { failed } = runSagaShard(0);
  expect(failed, 'a simulated schedule broke a saga rule (see the replay command above)').toBe(false);
}, 1_800_000);
