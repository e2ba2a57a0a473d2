// The pieces of the operations work that need no processes: the commit
// engine's read-only counters (what the metrics report), metricsListen in
// the node config, and the terminal log formatter.

import { describe, expect, test } from 'vitest';
import { parseConfig } from '../../src/node/config.ts';
import { logFormat, prettyLine } from '../../src/node/logger.ts';
import { EngineWorld } from './engine-fixture.ts';

class World extends EngineWorld {
  constructor() {
    super(['a', 'b'], { retryMinMs: 100, retryMaxMs: 1_000 });
  }

  start(txnId: string): void {
    this.engine.begin(txnId, 500);
    this.engine.commit(
      txnId,
      ['a', 'b'].map((participantId) => ({ participantId, payload: new Uint8Array([1]) })),
      () => {},
    );
  }
}

describe('commit engine counters (read by the metrics)', () => {
  test('count begun, committed, aborts by reason class, DECISION retries, and phases, without changing behaviour', () => {
    const w = new World();
    w.start('ok');
    w.vote('a', 'yes');
    w.vote('b', 'yes');
    expect(w.engine.phases()).toMatchObject({ deciding: 1 });
    w.applyAll();
    expect(w.engine.phases()).toMatchObject({ deciding: 0, delivering: 1 });
    // One DECISION fails and is retried; the other is acknowledged.
    w.decisions.shift()?.cb(new Error('down'));
    w.decisions.shift()?.cb(null);

    w.start('no');
    w.vote('a', 'no', 'nope');
    w.start('gone');
    w.vote('a', new Error('unreachable'));
    w.start('slow');
    w.now += 1_000;
    w.engine.tick();
    w.engine.begin('cancelled', 0);
    w.engine.abort('cancelled', 'changed my mind', () => {});
    w.engine.commit('foreign', [{ participantId: 'a', payload: new Uint8Array() }], () => {});
    w.engine.outcome('asked', 'a', () => {});
    w.applyAll();

    const c = w.engine.counters();
    expect(c.begun).toBe(5);
    expect(c.committed).toBe(1);
    expect(c.aborted).toEqual({
      vote_no: 1,
      unreachable: 1,
      timeout: 1,
      client: 1,
      leader_change: 1,
      presumed_abort_query: 1,
      operator: 0,
      heuristic_report: 0,
      staging_recovery: 0,
    });
    expect(c.decisionRetries).toBe(1);
    // Logged ABORTs wait for their acknowledgements like the COMMIT ('cancelled' sent no PREPARE: nobody to tell).
    expect(w.engine.phases()).toMatchObject({ begun: 0, preparing: 0, deciding: 0, delivering: 6 });
    // A copy: the caller cannot change the engine's counts.
    c.aborted.client = 99;
    expect(w.engine.counters().aborted.client).toBe(1);
  });
});

describe('metricsListen in the node config', () => {
  const base = {
    clusterId: 'c',
    nodeId: 'n1',
    listen: '127.0.0.1:7001',
    dataDir: 'd',
    peers: { n1: '127.0.0.1:7001' },
  };
  test('is optional, validated like listen, and must differ from it', () => {
    expect(parseConfig(base, 'x.json').metricsListen).toBeNull();
    expect(parseConfig({ ...base, metricsListen: '127.0.0.1:9101' }, 'x.json').metricsListen).toBe('127.0.0.1:9101');
    expect(() => parseConfig({ ...base, metricsListen: '9101' }, 'x.json')).toThrow(
      /"metricsListen" is "9101": expected host:port/,
    );
    expect(() => parseConfig({ ...base, metricsListen: '127.0.0.1:70000' }, 'x.json')).toThrow(
      /the port must be 1–65535/,
    );
    expect(() => parseConfig({ ...base, metricsListen: '127.0.0.1:7001' }, 'x.json')).toThrow(/a port of its own/);
  });
});

describe('log format', () => {
  test('JSON unless stderr is a terminal; VERDICT_LOG_FORMAT overrides', () => {
    expect(logFormat({}, false)).toBe('json');
    expect(logFormat({}, true)).toBe('pretty');
    expect(logFormat({ VERDICT_LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormat({ VERDICT_LOG_FORMAT: 'pretty' }, false)).toBe('pretty');
  });

  test('a pretty line keeps the identity first (with the pid, for kill) and every field, txnId included', () => {
    const line = prettyLine({
      level: 30,
      time: Date.UTC(2026, 0, 1, 12, 0, 1, 234),
      pid: 7,
      node: 'n1',
      msg: 'participant voted NO',
      txnId: 't-1',
      participantId: 'shop',
      reason: 'insufficient funds',
    });
    expect(line).toBe('12:00:01.234 INFO  [n1/shop pid 7] participant voted NO txnId=t-1 reason="insufficient funds"');
    expect(
      prettyLine({ level: 50, time: 0, msg: 'boom', err: { type: 'Error', message: 'disk full', stack: '...' } }),
    ).toBe('00:00:00.000 ERROR boom err="disk full"');
  });
});

describe('HTTP listeners (metrics and console share one listen path)', () => {
  test('a port in use is refused in words, naming the setting, for metrics and for the console alike; a free one binds and closes', async () => {
    const { Registry } = await import('prom-client');
    const { serveMetrics, MetricsListenError } = await import('../../src/transport/ops.ts');
    const { serveConsole, ConsoleListenError } = await import('../../src/console/server.ts');
    const metrics = await serveMetrics('127.0.0.1:0', new Registry());
    try {
      expect(metrics.address).toMatch(/^127\.0\.0\.1:\d+$/);
      const busy = metrics.address;
      const m = await serveMetrics(busy, new Registry()).catch((e: unknown) => e);
      expect(m).toBeInstanceOf(MetricsListenError);
      expect((m as Error).message).toBe(
        `cannot listen on ${busy} for metrics: the address is in use; pick another port`,
      );
      const c = await serveConsole(busy, () => false, null).catch((e: unknown) => e);
      expect(c).toBeInstanceOf(ConsoleListenError);
      expect((c as Error).message).toBe(
        `cannot listen on ${busy} for the console: the address is in use; pick another port; check "consoleListen"`,
      );
      const page = await serveConsole('127.0.0.1:0', () => false, null);
      const res = await fetch(`http://${page.address}/nothing`);
      expect([res.status, await res.text()]).toEqual([404, 'not found: the console is at /\n']);
      await page.close();
    } finally {
      await metrics.close();
    }
  });
});
