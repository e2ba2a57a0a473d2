// The node's door over its decision groups (src/node/group-routing.ts), with
// stand-in handlers per group: each call reaches the group of its id, a
// redirect names its group, a batched question is split by group and put
// back in the order asked, and a registration is made in every group.
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { groupOf } from '../../src/domain/group.ts';
import { routeCoordinator, routeSagas } from '../../src/node/group-routing.ts';
import type { SagasHandlers, SagaStatesResponse } from '../../src/transport/saga-rpc.ts';
import { coordinatorService, type CoordinatorHandlers } from '../../src/transport/coordinator-rpc.ts';

const G = 4;

type Cb = (err: Partial<grpc.StatusObject> | null, value?: unknown) => void;

/** A redirect as a follower of a group answers it. */
function notLeader(leader: string): grpc.ServiceError {
  const md = new grpc.Metadata();
  md.set('verdict-reason', 'NOT_LEADER');
  md.set('verdict-leader-id', leader);
  return Object.assign(new Error('not the leader'), {
    code: grpc.status.UNAVAILABLE,
    details: 'not the leader',
    metadata: md,
  });
}

/** Group g's stand-in: it leads unless g is in `follows`; it records what it was asked. */
function fakeGroups(follows: ReadonlySet<number>): {
  handlers: CoordinatorHandlers[];
  asked: [number, string, unknown][];
} {
  const asked: [number, string, unknown][] = [];
  const handlers = Array.from({ length: G }, (_, g) => {
    const h: Record<string, (call: { request: unknown }, cb: Cb) => void> = {};
    for (const method of Object.keys(coordinatorService).filter((m) => m !== 'CommitStream')) {
      h[method] = (call, cb) => {
        asked.push([g, method, call.request]);
        if (follows.has(g)) return cb(notLeader(`leader-of-${g}`));
        if (method === 'GetOutcomes') {
          const ids = (call.request as { txnIds: string[] }).txnIds;
          return cb(null, {
            answers: ids.map((txnId) => ({
              outcome: { txnId, outcome: 'OUTCOME_COMMITTED', reason: `group ${g}`, decisionIndex: 1 },
              code: 0,
              details: '',
            })),
          });
        }
        cb(null, { group: g });
      };
    }
    return h as unknown as CoordinatorHandlers;
  });
  return { handlers, asked };
}

function call<T>(
  h: CoordinatorHandlers | SagasHandlers,
  method: string,
  request: unknown,
  metadata = new grpc.Metadata(),
): Promise<{ err: Partial<grpc.StatusObject> | null; value: T }> {
  return new Promise((resolve) =>
    (h as unknown as Record<string, (c: unknown, cb: Cb) => void>)[method](
      { request, metadata, getPeer: () => 'test' },
      (err, value) => resolve({ err, value: value as T }),
    ),
  );
}

/** An id placed in group `g`. */
function idIn(g: number, tag: string): string {
  for (let i = 0; ; i++) if (groupOf(`${tag}-${i}`, G) === g) return `${tag}-${i}`;
}

describe('routing calls over decision groups', () => {
  it('sends a call about an id to its group, and a follower of that group redirects naming the group', async () => {
    const { handlers, asked } = fakeGroups(new Set([2]));
    const door = routeCoordinator(handlers, () => false);
    for (const g of [0, 1, 3]) {
      const r = await call<{ group: number }>(door, 'Commit', { txnId: idIn(g, 'c') });
      expect(r.value.group).toBe(g);
    }
    const r = await call(door, 'Begin', { txnId: idIn(2, 'b') });
    expect(r.err?.metadata?.get('verdict-group')).toEqual(['2']);
    expect(r.err?.metadata?.get('verdict-leader-id')).toEqual(['leader-of-2']);
    expect(asked.filter(([, m]) => m === 'Begin').map(([g]) => g)).toEqual([2]);
  });

  it('splits a batched GetOutcomes by group and answers in the order asked, a group led elsewhere answering each of its ids with its redirect', async () => {
    const { handlers } = fakeGroups(new Set([1]));
    const door = routeCoordinator(handlers, () => false);
    const ids = [idIn(3, 'o'), idIn(1, 'o'), idIn(0, 'o'), idIn(3, 'p'), idIn(2, 'o')];
    const r = await call<{ answers: { outcome: { txnId: string; reason: string } | null; code: number }[] }>(
      door,
      'GetOutcomes',
      { txnIds: ids, participantId: 'p1' },
    );
    expect(r.err).toBeNull();
    expect(r.value.answers.map((a) => a.outcome?.txnId ?? null)).toEqual([ids[0], null, ids[2], ids[3], ids[4]]);
    expect(r.value.answers.map((a) => a.outcome?.reason ?? a.code)).toEqual([
      'group 3',
      grpc.status.UNAVAILABLE,
      'group 0',
      'group 3',
      'group 2',
    ]);
  });

  it('makes a registration in every group and answers once every group did; a group led elsewhere makes it a redirect', async () => {
    const all = fakeGroups(new Set());
    const ok = await call(
      routeCoordinator(all.handlers, () => false),
      'RegisterParticipant',
      { participantId: 'p1' },
    );
    expect(ok.err).toBeNull();
    expect(all.asked.map(([g]) => g).sort()).toEqual([0, 1, 2, 3]);
    const some = fakeGroups(new Set([3]));
    const redirected = await call(
      routeCoordinator(some.handlers, () => false),
      'RegisterParticipant',
      { participantId: 'p1' },
    );
    expect(redirected.err?.metadata?.get('verdict-group')).toEqual(['3']);
  });

  it('counts a removal done in a group led elsewhere once that group applied it there', async () => {
    const { handlers } = fakeGroups(new Set([2]));
    const removedIn2 = await call<{ removed: boolean }>(
      routeCoordinator(handlers, (g) => g !== 2),
      'RemoveParticipant',
      { participantId: 'p1' },
    );
    expect(removedIn2.err).toBeNull();
    const stillIn2 = await call(
      routeCoordinator(handlers, () => true),
      'RemoveParticipant',
      { participantId: 'p1' },
    );
    expect(stillIn2.err?.metadata?.get('verdict-group')).toEqual(['2']);
  });

  it('answers removed when a retry finds the participant gone from the groups an earlier attempt removed it in', async () => {
    const removing = (gone: ReadonlySet<number>): CoordinatorHandlers[] =>
      fakeGroups(new Set()).handlers.map((h, g) => ({
        ...h,
        RemoveParticipant: (_call: unknown, cb: Cb) => cb(null, { removed: !gone.has(g), owed: [] }),
      })) as unknown as CoordinatorHandlers[];
    const retry = await call<{ removed: boolean }>(
      routeCoordinator(removing(new Set([0, 1])), () => false),
      'RemoveParticipant',
      {
        participantId: 'p1',
      },
    );
    expect(retry.value?.removed).toBe(true);
    const never = await call<{ removed: boolean }>(
      routeCoordinator(removing(new Set([0, 1, 2, 3])), () => false),
      'RemoveParticipant',
      { participantId: 'p1' },
    );
    expect(never.value?.removed).toBe(false);
  });

  it('answers a listing for the group verdict-group names, its redirect included, and refuses a group the cluster lacks', async () => {
    const { handlers, asked } = fakeGroups(new Set([1]));
    const door = routeCoordinator(handlers, () => false);
    const md = (g: string): grpc.Metadata => {
      const m = new grpc.Metadata();
      m.set('verdict-group', g);
      return m;
    };
    const r3 = await call<{ group: number }>(door, 'ListTransactions', { txnId: '', limit: 0 }, md('3'));
    expect(r3.value.group).toBe(3);
    expect(asked.filter(([, m]) => m === 'ListTransactions').map(([g]) => g)).toEqual([3]);
    const r1 = await call(door, 'ListTransactions', { txnId: '', limit: 0 }, md('1'));
    expect(r1.err?.metadata?.get('verdict-leader-id')).toEqual(['leader-of-1']);
    expect(r1.err?.metadata?.get('verdict-group')).toEqual(['1']);
    const bad = await call(door, 'ListTransactions', { txnId: '', limit: 0 }, md('4'));
    expect(bad.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('pages a saga listing through every group, one group a page, passing over groups with none', async () => {
    // Group g holds sagas g-0 .. g-(n-1), n = [3, 0, 2, 1][g]; a group's page holds at most two.
    const counts = [3, 0, 2, 1];
    const sagas = Array.from({ length: G }, (_, g) =>
      routeSagaStandIn(Array.from({ length: counts[g] }, (_, i) => `${g}-${i}`)),
    );
    const door = routeSagas(sagas);
    const seen: string[] = [];
    const tokens: string[] = [];
    let pageToken = '';
    for (let pages = 0; pages < 10; pages++) {
      const r = await call<{ sagas: { sagaId: string }[]; nextPageToken: string }>(door, 'ListSagas', {
        stuckOnly: false,
        limit: 2,
        pageToken,
      });
      expect(r.err).toBeNull();
      seen.push(...r.value.sagas.map((x) => x.sagaId));
      pageToken = r.value.nextPageToken;
      tokens.push(pageToken);
      if (pageToken === '') break;
    }
    expect(seen).toEqual(['0-0', '0-1', '0-2', '2-0', '2-1', '3-0']);
    expect(tokens.at(-1)).toBe('');
    const bad = await call(door, 'ListSagas', { stuckOnly: false, limit: 2, pageToken: '9.1' });
    expect(bad.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it("answers SagaStates with each saga's state from its own group's table, in the order asked", async () => {
    // Group g's table holds the sagas of group g only.
    const ids = [idIn(3, 's'), idIn(0, 's'), idIn(2, 's'), idIn(3, 't')];
    const handlers = Array.from({ length: G }, (_, g) => ({
      SagaStates: (c: { request: { sagaIds: string[] } }, cb: Cb) =>
        cb(null, {
          sagas: c.request.sagaIds.map((sagaId) => ({
            sagaId,
            state: groupOf(sagaId, G) === g ? `finished-in-${g}` : '',
            refused: '',
          })),
        }),
    })) as unknown as SagasHandlers[];
    const door = routeSagas(handlers) as unknown as CoordinatorHandlers;
    const r = await call<SagaStatesResponse>(door, 'SagaStates', { sagaIds: ids });
    expect(r.err).toBeNull();
    expect(r.value.sagas.map((a) => `${a.sagaId}:${a.state}`)).toEqual(
      ids.map((id) => `${id}:finished-in-${groupOf(id, G)}`),
    );
  });
});

/** A group's saga listing over `ids`, two a page at most, its token the position of the last one given. */
function routeSagaStandIn(ids: readonly string[]): SagasHandlers {
  const h: Record<string, (call: { request: unknown }, cb: Cb) => void> = {
    ListSagas: (c, cb) => {
      const r = c.request as { limit: number; pageToken: string };
      const from = r.pageToken === '' ? 0 : Number(r.pageToken);
      const page = ids.slice(from, from + Math.min(2, r.limit || 2));
      const next = from + page.length < ids.length ? String(from + page.length) : '';
      cb(null, { sagas: page.map((sagaId) => ({ sagaId })), nextPageToken: next });
    },
  };
  return h as unknown as SagasHandlers;
}
