// A participant's resource kind (memory, postgres, ...): carried by its
// registration into the replicated record, checked where log entries are
// checked (a registration without one is malformed), and kept by snapshots.
import { describe, expect, it } from 'vitest';
import { commandProblem } from '../../src/commit/command-check.ts';
import { type Command, DecisionTable, encodeCommand, RESOURCE_KIND } from '../../src/commit/state.ts';
import { resourceKindOf } from '../../src/participant/runtime.ts';
import { normalServes } from '../../src/domain/protocol.ts';
import type { TccParticipantOptions } from '../../src/participant/tcc/setup.ts';

describe('resource kind of a participant', () => {
  it('a registration records its kind; a later one with another kind replaces it and keeps the registration time', () => {
    const t = new DecisionTable();
    expect(t.apply({ t: 'register', id: 'shop', endpoint: '127.0.0.1:1', atMs: 5, kind: 'postgres' }, 1)).toEqual({
      t: 'register',
      participant: { id: 'shop', endpoint: '127.0.0.1:1', registeredAtMs: 5, resourceKind: 'postgres', serves: [] },
      // Not a participant removed with --force coming back.
      returned: false,
    });
    t.apply({ t: 'register', id: 'shop', endpoint: '127.0.0.1:1', atMs: 9, kind: 'mysql' }, 2);
    expect(t.participants.get('shop')).toEqual({
      id: 'shop',
      endpoint: '127.0.0.1:1',
      registeredAtMs: 5,
      resourceKind: 'mysql',
      serves: [],
    });
  });

  it('a registration records the optional methods served; the log check refuses a serves that is not a short list of method names', () => {
    const t = new DecisionTable();
    const reg = { t: 'register' as const, id: 'shop', endpoint: '127.0.0.1:1', atMs: 1, kind: 'memory' };
    t.apply({ ...reg, serves: ['Exchange', 'Status'] }, 1);
    expect(t.participants.get('shop')?.serves).toEqual(['Exchange', 'Status']);
    expect(commandProblem(encodeCommand({ ...reg, serves: ['Status', 'SomethingNewer'] }))).toBeNull();
    expect(commandProblem(encodeCommand(reg))).toBeNull();
    for (const serves of [
      ['status'],
      [''],
      ['Sta tus'],
      ['S'.repeat(33)],
      Array.from({ length: 17 }, (_, i) => `M${i}`),
    ])
      expect(commandProblem(encodeCommand({ ...reg, serves })), JSON.stringify(serves)).toMatch(/serves/);
    expect(commandProblem(new TextEncoder().encode(`\u0002${JSON.stringify({ ...reg, serves: 'Status' })}`))).toMatch(
      /serves/,
    );
    expect(normalServes(['Status', 'Exchange', 'Status'])).toEqual(['Exchange', 'Status']);
  });

  it('a register command without a resource kind is malformed', () => {
    expect(
      commandProblem(
        encodeCommand({ t: 'register', id: 'old', endpoint: '127.0.0.1:2', atMs: 1 } as unknown as Command),
      ),
    ).toMatch(/resource kind/);
  });

  it('a snapshot keeps the kind; a participant without one in a snapshot is malformed', () => {
    const t = new DecisionTable();
    t.apply({ t: 'register', id: 'shop', endpoint: '127.0.0.1:1', atMs: 5, kind: 'tcc-postgres' }, 1);
    const copy = new DecisionTable();
    copy.restoreFrom(JSON.parse(JSON.stringify(t.toJSON())));
    expect(copy.participants.get('shop')?.resourceKind).toBe('tcc-postgres');

    const old = JSON.parse(JSON.stringify(t.toJSON())) as { p: Record<string, unknown>[] };
    for (const p of old.p) delete p.resourceKind;
    expect(() => new DecisionTable().restoreFrom(old)).toThrow(
      /^a participant in the snapshot is malformed: no resource kind$/,
    );
  });

  it('the command check refuses a log entry whose kind is not a short lower-case word', () => {
    const reg = { t: 'register' as const, id: 'shop', endpoint: '127.0.0.1:1', atMs: 1 };
    expect(commandProblem(encodeCommand({ ...reg, kind: 'saga-postgres' }))).toBeNull();
    for (const kind of ['', 'Postgres', '9db', 'x'.repeat(33), 'pg sql', '<script>', 'pg\n']) {
      expect(commandProblem(encodeCommand({ ...reg, kind })), JSON.stringify(kind)).toMatch(/resource kind/);
      expect(RESOURCE_KIND.test(kind)).toBe(false);
    }
    const notString = new TextEncoder().encode(`\u0002${JSON.stringify({ ...reg, kind: 7 })}`);
    expect(commandProblem(notString)).toMatch(/resource kind/);
  });

  it('each participant runtime names its kind', () => {
    expect(resourceKindOf({})).toBe('memory');
    expect(resourceKindOf({ postgres: { url: 'postgres://x/y' } })).toBe('postgres');
    expect(resourceKindOf({ mysql: { url: 'mysql://x/y' } })).toBe('mysql');
    expect(resourceKindOf({ tcc: { memory: {} } as unknown as TccParticipantOptions })).toBe('tcc-memory');
    expect(
      resourceKindOf({
        tcc: { postgres: { url: 'postgres://x/y', handlers: {} } } as unknown as TccParticipantOptions,
      }),
    ).toBe('tcc-postgres');
    for (const k of [
      'memory',
      'postgres',
      'mysql',
      'tcc-memory',
      'tcc-postgres',
      'saga-memory',
      'saga-postgres',
      'unknown',
    ])
      expect(RESOURCE_KIND.test(k), k).toBe(true);
  });
});
