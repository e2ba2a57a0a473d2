// The console's saga and lease routes, against fakes of the node: bad input
// is refused with the reason, acts are offered only where they can succeed,
// and relays are read from their partition leases.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/console/http-error.ts';
import { productRoutes, type ConsoleSaga, type ConsoleSagas } from '../../src/console/product-api.ts';

const stuck: ConsoleSaga = {
  sagaId: 'refund-1',
  state: 'compensating',
  type: 'order-refund',
  labels: {},
  startedAtMs: 1,
  endedAtMs: null,
  stuck: { step: 0, kind: 'compensate', attempts: 3, lastError: 'refund system unreachable', atMs: 5 },
  steps: [
    {
      service: 'pay',
      name: 'debit',
      status: 'compensating',
      attempts: 3,
      lastError: 'refund system unreachable',
      lastFailureAtMs: 5,
    },
  ],
  timeline: [],
};
const done: ConsoleSaga = { ...stuck, sagaId: 'trip-2', state: 'finished', stuck: null, endedAtMs: 9 };

function routes(leader: boolean) {
  const sagas: ConsoleSagas = {
    isLeader: () => leader,
    list: () => [stuck, done],
    get: (id) => [stuck, done].find((x) => x.sagaId === id) ?? null,
    retry: async () => stuck,
    resolve: async () => ({ ...stuck, state: 'compensated', stuck: null }),
  };
  const driver = { leader: () => (leader ? 'n1' : 'n2'), isLeader: () => leader };
  const call = productRoutes({
    nodeId: 'n1',
    ready: () => ({
      driver,
      sagas,
      leases: () => ({
        clockAtMs: 1_000,
        leases: [
          { name: 'outbox/orders/p1', holder: 'relay-a', owner: '', epoch: 2, expiresAtMs: 5_000 },
          { name: 'outbox/orders/p0', holder: 'relay-a', owner: '', epoch: 1, expiresAtMs: 4_000 },
          { name: 'outbox/orders/p2', holder: 'relay-b', owner: '', epoch: 3, expiresAtMs: 500 },
          { name: 'app/lock', holder: 'worker-1', owner: '', epoch: 4, expiresAtMs: 9_000 },
        ],
      }),
    }),
    leaderRef: async (id) => ({ leaderId: id, address: '127.0.0.1:7002', consoleUrl: 'http://127.0.0.1:9102/' }),
    notHere: (d, what) => (d.isLeader() ? null : `${what} runs on the leader, ${d.leader()}: open its console`),
    notLeader: (_d, what) => new HttpError(409, `${what} runs on the leader`),
    requireAdmin: () => undefined,
    operatorOf: () => 'ada via console of n1',
  });
  const req = {} as IncomingMessage;
  return (path: string, method = 'GET', body: Record<string, unknown> = {}) =>
    call(req, new URL(path, 'http://x'), method, async () => body);
}

const refusal = async (p: Promise<unknown>): Promise<[number, string]> =>
  p.then(
    () => [0, 'answered'],
    (e: HttpError) => [e.status, e.message],
  );

describe('console saga and lease routes', () => {
  it('lists by filter with counts, and refuses a bad filter, limit or saga id with the reason', async () => {
    const get = routes(true);
    const r = (await get('/api/sagas?filter=stuck')) as { sagas: { sagaId: string }[]; counts: unknown };
    expect(r.sagas.map((x) => x.sagaId)).toEqual(['refund-1']);
    expect(r.counts).toEqual({ running: 1, stuck: 1, ended: 1 });
    expect(await refusal(get('/api/sagas?filter=old'))).toEqual([
      400,
      'filter "old" is not one of running, stuck, ended, all',
    ]);
    expect(await refusal(get('/api/sagas?limit=0'))).toEqual([400, 'limit "0" must be a whole number from 1 to 1000']);
    expect((await refusal(get('/api/sagas/%20bad')))[0]).toBe(400);
    expect((await refusal(get('/api/sagas/none-such')))[1]).toMatch(/^no saga "none-such" is kept on node n1/);
    expect(await get('/api/elsewhere')).toBeUndefined();
  });

  it('offers retry and resolve only on the leader, for a stuck saga, and says why not otherwise', async () => {
    const onLeader = routes(true);
    expect(((await onLeader('/api/sagas/refund-1')) as { actions: unknown }).actions).toEqual({
      retry: { offered: true, why: '' },
      resolve: { offered: true, why: '', step: 0, as: 'compensated' },
    });
    const ended = (await onLeader('/api/sagas/trip-2')) as { actions: { retry: { offered: boolean; why: string } } };
    expect(ended.actions.retry).toEqual({
      offered: false,
      why: 'this saga is finished and not stuck: nothing waits for an operator',
    });
    const onFollower = (await routes(false)('/api/sagas/refund-1')) as {
      actions: { retry: { offered: boolean; why: string } };
      leaderRef: { consoleUrl: string };
    };
    expect(onFollower.actions.retry).toEqual({
      offered: false,
      why: 'a saga act runs on the leader, n2: open its console',
    });
    expect(onFollower.leaderRef.consoleUrl).toBe('http://127.0.0.1:9102/');
  });

  it('needs a reason and a valid step for an act; refuses it on a follower', async () => {
    const post = routes(true);
    expect(await refusal(post('/api/sagas/refund-1/retry', 'POST', { reason: ' ' }))).toEqual([
      400,
      'a saga retry needs a reason: it is recorded in the log with who asked and when',
    ]);
    expect(
      await refusal(post('/api/sagas/refund-1/resolve', 'POST', { reason: 'by hand', step: -1, as: 'compensated' })),
    ).toEqual([400, '"step" must be the number of the stuck step (from 0)']);
    expect(
      await refusal(post('/api/sagas/refund-1/resolve', 'POST', { reason: 'by hand', step: 0, as: 'undone' })),
    ).toEqual([400, '"as" must be "done" or "compensated"']);
    expect(await refusal(post('/api/sagas/refund-1/retry'))).toEqual([
      405,
      '/api/sagas/refund-1/retry takes POST with a JSON body',
    ]);
    const r = (await post('/api/sagas/refund-1/resolve', 'POST', {
      reason: 'by hand',
      step: 0,
      as: 'compensated',
    })) as { saga: { state: string }; operator: string };
    expect([r.saga.state, r.operator]).toEqual(['compensated', 'ada via console of n1']);
    expect(await refusal(routes(false)('/api/sagas/refund-1/retry', 'POST', { reason: 'x' }))).toEqual([
      409,
      'saga retry runs on the leader',
    ]);
  });

  it('reads relays from their live partition leases; an expired lease is no relay partition', async () => {
    const r = (await routes(true)('/api/leases')) as { relays: unknown[]; leases: { name: string; live: boolean }[] };
    expect(r.relays).toEqual([
      { prefix: 'outbox/orders', holder: 'relay-a', partitions: [0, 1], live: true, expiresInMs: 3_000 },
    ]);
    expect(r.leases.map((l) => [l.name, l.live])).toEqual([
      ['app/lock', true],
      ['outbox/orders/p0', true],
      ['outbox/orders/p1', true],
      ['outbox/orders/p2', false],
    ]);
  });
});
