// GroupRoutes (src/transport/group-routes.ts), the pure routing every caller
// of the cluster shares: one group until a status answer says more, a
// status answer at G = 1 or from a cluster before groups changes nothing,
// a count from the network out of range is ignored, and which refusals show
// the routing stale.
import { describe, expect, it } from 'vitest';
import { groupOf } from '../../src/domain/group.ts';
import { GroupRoutes, parseGroup } from '../../src/transport/group-routes.ts';

const A = '10.0.0.1:7001';
const B = '10.0.0.2:7001';
const C = '10.0.0.3:7001';

function routes(): GroupRoutes {
  return new GroupRoutes([A, B, C], { redirectsMax: 3 });
}

describe('GroupRoutes', () => {
  it('routes every id to the one base finder until it learns more', () => {
    const r = routes();
    expect(r.groups).toBe(1);
    expect(r.known).toBe(false);
    for (const id of ['t1', 't2', 'order-42']) expect(r.finderFor(id)).toBe(r.base);
  });

  it('a status answer at G = 1 or 0 (a cluster before groups) keeps the one finder and its hint as they were', () => {
    for (const groupCount of [0, 1]) {
      const r = routes();
      r.base.reached(B);
      r.learn({ groupCount, groups: [{ group: 0, leaderAddress: C }] });
      expect(r.known).toBe(true);
      expect(r.groups).toBe(1);
      expect(r.base.leader).toBe(B);
      expect(r.finderFor('t1')).toBe(r.base);
    }
  });

  it("at G = 4 each id goes to its group's finder, hinted at the group's leader; group 0's is the base", () => {
    const r = routes();
    r.learn({
      groupCount: 4,
      groups: [
        { group: 0, leaderAddress: A },
        { group: 1, leaderAddress: B },
        { group: 2, leaderAddress: C },
        { group: 3, leaderAddress: '' },
      ],
    });
    expect(r.groups).toBe(4);
    expect(r.finderFor('order-42')).toBe(r.base);
    expect(r.finderFor('t2').leader).toBe(B);
    expect(r.finderFor('t10').leader).toBe(C);
    expect(r.finderFor('t1').leader).toBeUndefined();
    expect(r.finderFor('t1')).toBe(r.finderOfGroup(groupOf('t1', 4)));
    expect(r.leaders().sort()).toEqual([A, B, C]);
    expect(r.view().groups.map((g) => g.leaderAddress)).toEqual([A, B, C, '']);
  });

  it('ignores a group count out of range and a group past the count (they came from the network)', () => {
    const r = routes();
    r.learn({ groupCount: 65, groups: [] });
    expect(r.known).toBe(false);
    expect(r.groups).toBe(1);
    r.learn({
      groupCount: 2,
      groups: [
        { group: 7, leaderAddress: A },
        { group: 1, leaderAddress: 'not an address' },
      ],
    });
    expect(r.groups).toBe(2);
    expect(r.finderOfGroup(1)?.leader).toBeUndefined();
  });

  it('a refusal naming a group is stale only when the routing does not have that group', () => {
    const r = routes();
    expect(r.stale(undefined)).toBe(false);
    expect(r.stale('0')).toBe(false);
    expect(r.stale('3')).toBe(true);
    expect(r.stale('x')).toBe(false);
    r.learn({ groupCount: 4, groups: [] });
    expect(r.stale('3')).toBe(false);
    expect(r.stale('4')).toBe(true);
    expect([parseGroup('12'), parseGroup('123'), parseGroup('-1'), parseGroup('')]).toEqual([
      12,
      undefined,
      undefined,
      undefined,
    ]);
  });
});
