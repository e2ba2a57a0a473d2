// What the web console keeps in a node's memory: transaction timelines and
// leader changes, both bounded rings; and the consoleListen config key.
import { describe, expect, it } from 'vitest';
import { LeaderHistory, TxnTimeline } from '../../src/console/timeline.ts';
import { ConfigError, parseConfig } from '../../src/node/config.ts';
import { N1_CONFIG } from './config-fixture.ts';
import { refusalOf } from './refusal.ts';

describe('console timeline', () => {
  it('keeps events in order, at most eventsMax per transaction, counting the rest', () => {
    const t = new TxnTimeline(10, 3);
    t.record('a', { atMs: 1, kind: 'prepare', participantId: 'shop' });
    t.record('a', { atMs: 2, kind: 'vote', participantId: 'shop', detail: 'YES' });
    t.record('a', { atMs: 3, kind: 'decided', index: 7, detail: 'COMMIT' });
    t.record('a', { atMs: 4, kind: 'ack', participantId: 'shop' });
    t.record('a', { atMs: 5, kind: 'forget', index: 9 });
    const a = t.get('a');
    expect(a?.events.map((e) => [e.atMs, e.kind, e.participantId, e.detail, e.index])).toEqual([
      [1, 'prepare', 'shop', '', 0],
      [2, 'vote', 'shop', 'YES', 0],
      [3, 'decided', '', 'COMMIT', 7],
    ]);
    expect(a?.dropped).toBe(2);
  });

  it('is a ring of txnsMax transactions: the one recorded first leaves first', () => {
    const t = new TxnTimeline(3, 8);
    for (const id of ['t1', 't2', 't3', 't4']) t.record(id, { atMs: 0, kind: 'begin' });
    expect(t.size).toBe(3);
    expect(t.get('t1')).toBeNull();
    expect(t.has('t4')).toBe(true);
  });

  it('collapses retries of a DECISION into one row per kind and participant, with a count, the last time and the last error', () => {
    const t = new TxnTimeline(10, 64);
    t.record('r', { atMs: 1, kind: 'decided', index: 5, detail: 'COMMIT' });
    for (let i = 0; i < 64; i++) {
      t.record('r', { atMs: 10 + 2 * i, kind: 'decision-sent', participantId: 'shop', detail: 'COMMIT' });
      t.record('r', {
        atMs: 11 + 2 * i,
        kind: 'no-ack',
        participantId: 'shop',
        detail: `14 UNAVAILABLE: attempt ${i}`,
      });
    }
    t.record('r', { atMs: 500, kind: 'decision-sent', participantId: 'ledger', detail: 'COMMIT' });
    t.record('r', { atMs: 501, kind: 'ack', participantId: 'ledger' });
    t.record('r', { atMs: 600, kind: 'decision-sent', participantId: 'shop', detail: 'COMMIT' });
    t.record('r', { atMs: 601, kind: 'ack', participantId: 'shop' });
    // After its ACK a participant's next DECISION (a new leader resending) is a new row.
    t.record('r', { atMs: 700, kind: 'decision-sent', participantId: 'shop', detail: 'COMMIT' });
    const r = t.get('r');
    expect(r?.dropped).toBe(0);
    expect(r?.events.map((e) => [e.kind, e.participantId, e.count, e.atMs, e.lastAtMs, e.detail])).toEqual([
      ['decided', '', 1, 1, 1, 'COMMIT'],
      ['decision-sent', 'shop', 65, 10, 600, 'COMMIT'],
      ['no-ack', 'shop', 64, 11, 137, '14 UNAVAILABLE: attempt 63'],
      ['decision-sent', 'ledger', 1, 500, 500, 'COMMIT'],
      ['ack', 'ledger', 1, 501, 501, ''],
      ['ack', 'shop', 1, 601, 601, ''],
      ['decision-sent', 'shop', 1, 700, 700, 'COMMIT'],
    ]);
  });

  it('clips long details (a vote reason comes from a participant)', () => {
    const t = new TxnTimeline();
    t.record('x', { atMs: 0, kind: 'vote', detail: 'n'.repeat(10_000) });
    expect(t.get('x')?.events[0]?.detail.length).toBe(200);
  });
});

describe('console leader history', () => {
  it('notes a change only when the term or the leader changes, and keeps the last max', () => {
    const h = new LeaderHistory(3);
    h.note(1, 1, '');
    h.note(2, 1, 'n1');
    h.note(3, 1, 'n1');
    h.note(4, 2, '');
    h.note(5, 2, 'n2');
    expect(h.list()).toEqual([
      { atMs: 2, term: 1, leaderId: 'n1' },
      { atMs: 4, term: 2, leaderId: '' },
      { atMs: 5, term: 2, leaderId: 'n2' },
    ]);
    // Leaders seen taking office (verdict_leader_changes_seen_total): n1 in term 1, n2 in term 2; not bounded by the
    // list.
    expect(h.leadersSeenTotal).toBe(2);
    for (let term = 3; term < 10; term++) h.note(term * 10, term, 'n3');
    expect(h.list()).toHaveLength(3);
    expect(h.leadersSeenTotal).toBe(9);
  });
});

describe('consoleListen', () => {
  const file = '/etc/verdict/n1.json';
  it('is null unless set, and takes host:port', () => {
    expect(parseConfig(N1_CONFIG, file).consoleListen).toBeNull();
    expect(parseConfig({ ...N1_CONFIG, consoleListen: '127.0.0.1:9201' }, file).consoleListen).toBe('127.0.0.1:9201');
    expect(parseConfig(N1_CONFIG, file, { sets: ['consoleListen=127.0.0.1:9202'] }).consoleListen).toBe(
      '127.0.0.1:9202',
    );
  });

  it('refuses a bad address, or one another listener has', () => {
    expect(refusalOf(ConfigError, () => parseConfig({ ...N1_CONFIG, consoleListen: 'nowhere' }, file))).toMatch(
      /"consoleListen"/,
    );
    expect(refusalOf(ConfigError, () => parseConfig({ ...N1_CONFIG, consoleListen: '127.0.0.1:0' }, file))).toMatch(
      /the port must be 1–65535/,
    );
    expect(refusalOf(ConfigError, () => parseConfig({ ...N1_CONFIG, consoleListen: N1_CONFIG.listen }, file))).toMatch(
      /give the console a port of its own/,
    );
  });
});
