// The PostgreSQL participant's pure pieces, no server needed: the gid format
// (property tests: within PostgreSQL's 200-byte limit, SQL-safe, one gid per
// (cluster, participant, transaction), ours recognised and no one else's),
// the journal / pg_prepared_xacts reconciliation, the payload and the flags.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseParticipantArgs } from '../../src/cli/participant.ts';
import { GID_BYTES_MAX, GID_PATTERN, gidOf, gidPrefix, parseGid } from '../../src/participant/postgres-gid.ts';
import { reconcile } from '../../src/participant/postgres-recovery.ts';
import { describePgError, parsePgPayload, pgPayload, type PreparedGid } from '../../src/participant/postgres.ts';
import type { TxnRecord } from '../../src/participant/types.ts';

const id = fc.string({ minLength: 1, maxLength: 80, unit: 'grapheme' });
const txnId = fc.string({ minLength: 1, maxLength: 256, unit: 'grapheme' });

describe('gid format', () => {
  it('names cluster, participant and transaction readably when they fit', () => {
    expect(gidOf(gidPrefix('local', 'shop'), 'T42')).toBe('verdict:local:shop:T42');
    expect(gidOf(gidPrefix('local', 'shop'), "order/17 'x'")).toBe('verdict:local:shop:order%2F17%20%27x%27');
    expect(parseGid(gidPrefix('local', 'shop'), 'verdict:local:shop:order%2F17')).toEqual({
      kind: 'readable',
      txnId: 'order/17',
    });
  });

  it('hashes a txn id that does not fit, and a prefix longer than 100 bytes', () => {
    const long = gidOf(gidPrefix('local', 'shop'), 'x'.repeat(256));
    expect(long).toMatch(/^verdict:local:shop:#[0-9a-f]{40}$/);
    expect(parseGid(gidPrefix('local', 'shop'), long)).toEqual({ kind: 'hashed' });
    expect(gidPrefix('c'.repeat(120), 'shop')).toMatch(/^verdict:#[0-9a-f]{32}:$/);
  });

  it('property: every gid fits PostgreSQL (≤ 199 bytes, ASCII), is SQL-safe, and a readable one gives its txn id back', () => {
    fc.assert(
      fc.property(id, id, txnId, (c, p, t) => {
        const prefix = gidPrefix(c, p);
        const gid = gidOf(prefix, t);
        expect(Buffer.byteLength(gid, 'utf8')).toBeLessThanOrEqual(GID_BYTES_MAX);
        expect(gid).toMatch(GID_PATTERN);
        expect(gid).not.toMatch(/['"\\\s]/);
        const parsed = parseGid(prefix, gid);
        if (parsed.kind === 'readable') expect(parsed.txnId).toBe(t);
        else expect(parsed.kind).toBe('hashed');
      }),
      { numRuns: 500 },
    );
  });

  it("property: distinct (cluster, participant, txn) get distinct gids, and one participant never claims another's gid", () => {
    fc.assert(
      fc.property(fc.tuple(id, id, txnId), fc.tuple(id, id, txnId), ([c1, p1, t1], [c2, p2, t2]) => {
        const a = gidOf(gidPrefix(c1, p1), t1);
        const b = gidOf(gidPrefix(c2, p2), t2);
        const same = c1 === c2 && p1 === p2 && t1 === t2;
        expect(a === b).toBe(same);
        if (c1 !== c2 || p1 !== p2) expect(parseGid(gidPrefix(c1, p1), b)).toEqual({ kind: 'foreign' });
      }),
      { numRuns: 500 },
    );
    // The separator cannot be forged: participant "a:b" is not participant "a" with txn "b:...".
    expect(parseGid(gidPrefix('c', 'a'), gidOf(gidPrefix('c', 'a:b'), 'T'))).toEqual({ kind: 'foreign' });
    expect(parseGid(gidPrefix('c', 'a'), 'verdict:c:a:x:y')).toEqual({ kind: 'foreign' });
  });
});

describe('reconcile: the journal and pg_prepared_xacts', () => {
  const prefix = gidPrefix('c', 'shop');
  const g = (t: string): string => gidOf(prefix, t);
  const found = (gid: string, atMs = 5): PreparedGid => ({
    gid,
    parsed: parseGid(prefix, gid),
    preparedAtMs: atMs,
    ageMs: 0,
  });
  const prepared = (t: string): TxnRecord => ({
    kind: 'prepared',
    txnId: t,
    atMs: 1,
    payloadB64: '',
    participants: ['shop'],
  });

  it("keeps the journal's prepared transactions in doubt whether or not PostgreSQL still holds them", () => {
    const journal = [prepared('A'), prepared('B')];
    const r = reconcile(journal, [found(g('A'))], g);
    expect(r.records).toEqual(journal);
    expect(r.adopted).toEqual([]);
  });

  it('adopts a gid prepared in PostgreSQL but not in the journal (or decided in it) as in doubt', () => {
    const journal: TxnRecord[] = [{ kind: 'aborted', txnId: 'D', atMs: 1 }];
    const r = reconcile(journal, [found(g('X'), 42), found(g('D'), 43)], g);
    expect(r.adopted).toEqual([
      { txnId: 'X', gid: g('X') },
      { txnId: 'D', gid: g('D') },
    ]);
    expect(r.records.slice(1)).toEqual([
      { kind: 'prepared', txnId: 'X', atMs: 42, payloadB64: '', participants: [] },
      { kind: 'prepared', txnId: 'D', atMs: 43, payloadB64: '', participants: [] },
    ]);
  });

  it('matches a hashed gid through the journal, and reports one nobody knows instead of deciding it', () => {
    const known = 'k'.repeat(250);
    const r = reconcile([prepared(known)], [found(g(known)), found(g('u'.repeat(250)))], g);
    expect(r.adopted).toEqual([]);
    expect(r.txnIdOf.get(g(known))).toBe(known);
    expect(r.unknown.map((u) => u.gid)).toEqual([g('u'.repeat(250))]);
  });
});

describe('payload and errors', () => {
  it('parses {"sql": [...]}, takes an empty payload as in-process work, and gives reasons for the rest', () => {
    expect(parsePgPayload(pgPayload(['SELECT 1']))).toEqual({ ok: true, sql: ['SELECT 1'] });
    expect(parsePgPayload(new Uint8Array())).toEqual({ ok: true, sql: null });
    expect(parsePgPayload(new TextEncoder().encode('{"set": {}}'))).toEqual({
      ok: false,
      reason: 'payload has an unknown field "set"; allowed: sql',
    });
    expect(parsePgPayload(new TextEncoder().encode('nope'))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^payload is not UTF-8 JSON/),
    });
  });

  it('describes a lost connection as one', () => {
    expect(
      describePgError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })),
    ).toBe('lost connection to PostgreSQL: connect ECONNREFUSED 127.0.0.1:1');
    expect(describePgError(new Error('Connection terminated unexpectedly'))).toBe(
      'lost connection to PostgreSQL: Connection terminated unexpectedly',
    );
  });
});

describe('verdict participant flags', () => {
  const base = ['--id', 'shop', '--listen', '127.0.0.1:7101', '--data', 'd'];
  it('selects the postgres resource with --resource postgres --pg-url, memory by default', () => {
    expect(parseParticipantArgs(base, {})).toMatchObject({ resource: 'memory', pgUrl: undefined });
    expect(
      parseParticipantArgs(
        [...base, '--resource', 'postgres', '--pg-url', 'postgres://u@h:5432/shop', '--pg-concurrency', '4'],
        {},
      ),
    ).toMatchObject({
      resource: 'postgres',
      pgUrl: 'postgres://u@h:5432/shop',
      pgConcurrency: 4,
    });
  });

  it('refuses incomplete or mismatched postgres flags with one line', () => {
    expect(() => parseParticipantArgs([...base, '--resource', 'postgres'], {})).toThrow(
      '--resource postgres needs --pg-url postgres://USER@HOST:PORT/DATABASE',
    );
    expect(() => parseParticipantArgs([...base, '--pg-url', 'postgres://h/db'], {})).toThrow(
      '--pg-url and --pg-concurrency go with --resource postgres',
    );
    expect(() => parseParticipantArgs([...base, '--resource', 'oracle'], {})).toThrow(
      '--resource must be memory, postgres or mysql, not "oracle"',
    );
    expect(() =>
      parseParticipantArgs(
        [...base, '--resource', 'postgres', '--pg-url', 'postgres://h/db', '--pg-concurrency', '0'],
        {},
      ),
    ).toThrow(/--pg-concurrency must be an integer from 1 to 1000/);
    expect(() =>
      parseParticipantArgs([...base, '--resource', 'postgres', '--pg-url', 'mysql://u:pw@h/db'], {}),
    ).toThrow('--pg-url "mysql://u:***@h/db" must start with postgres:// or postgresql://');
  });
});
