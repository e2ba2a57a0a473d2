// Trace context at the edges (W3C traceparent), spans with OpenTelemetry's
// in-memory exporter, the node's per-transaction memory of contexts, and log
// lines: trace ids on lines about a transaction, and no key twice.
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import * as grpc from '@grpc/grpc-js';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/node/config.ts';
import { createLogger } from '../../src/node/logger.ts';
import { TxnTraces } from '../../src/node/txn-traces.ts';
import {
  parseTraceparent,
  traceContext,
  traceFromMetadata,
  traceToMetadata,
} from '../../src/transport/trace-context.ts';
import { NO_TRACING, openTracing, otlpEndpointFrom, TracingSetupError } from '../../src/transport/tracing.ts';
import { childLogger } from '../../src/util/child-log.ts';
import { withTraceIds } from '../../src/util/trace-log.ts';
import { N1_CONFIG } from './config-fixture.ts';
import { duplicateKeys } from './json-keys.ts';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';
const PARENT = { traceparent: `00-${TRACE_ID}-${SPAN_ID}-01` };

function lines(): { out: string[]; dest: { write(s: string): void } } {
  const out: string[] = [];
  return { out, dest: { write: (s: string) => void out.push(...s.split('\n').filter((l) => l !== '')) } };
}

describe('W3C trace context', () => {
  it('takes a valid traceparent and refuses malformed ones (all-zero ids, version ff, wrong lengths)', () => {
    expect(parseTraceparent(PARENT.traceparent)).toEqual({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 1 });
    for (const bad of [
      `00-${'0'.repeat(32)}-${SPAN_ID}-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `ff-${TRACE_ID}-${SPAN_ID}-01`,
      `00-${TRACE_ID}-${SPAN_ID}`,
      `00-${TRACE_ID}-${SPAN_ID}-01-extra`,
      'garbage',
    ])
      expect(parseTraceparent(bad), bad).toBeNull();
    // A later version may append fields: its first four are read.
    expect(parseTraceparent(`01-${TRACE_ID}-${SPAN_ID}-01-more`)?.traceId).toBe(TRACE_ID);
    // A tracestate that is not printable ASCII is dropped, the traceparent kept.
    expect(traceContext(PARENT.traceparent, 'a=1\n')).toEqual(PARENT);
  });

  it('travels in gRPC metadata both ways; a malformed header reads as none', () => {
    const md = traceToMetadata({ ...PARENT, tracestate: 'vendor=x' });
    expect(traceFromMetadata(md)).toEqual({ ...PARENT, tracestate: 'vendor=x' });
    const bad = new grpc.Metadata();
    bad.set('traceparent', 'not-a-traceparent');
    expect(traceFromMetadata(bad)).toBeNull();
  });

  it('node config: otlpEndpoint is off by default, an http(s) URL from the file or VERDICT_OTLP_ENDPOINT, anything else refused naming the key', () => {
    expect(parseConfig(N1_CONFIG, 'n1.json').otlpEndpoint).toBeNull();
    expect(parseConfig({ ...N1_CONFIG, otlpEndpoint: 'http://127.0.0.1:4318' }, 'n1.json').otlpEndpoint).toBe(
      'http://127.0.0.1:4318',
    );
    expect(
      parseConfig(N1_CONFIG, 'n1.json', { env: { VERDICT_OTLP_ENDPOINT: 'https://collector:4318' } }).otlpEndpoint,
    ).toBe('https://collector:4318');
    expect(() => parseConfig({ ...N1_CONFIG, otlpEndpoint: 'collector:4318' }, 'n1.json')).toThrow(ConfigError);
    expect(() => parseConfig({ ...N1_CONFIG, otlpEndpoint: 'collector:4318' }, 'n1.json')).toThrow(
      /otlpEndpoint.*expected an http:\/\/ or https:\/\/ URL/,
    );
  });

  it('takes the OTLP endpoint from the setting, else OTEL_EXPORTER_OTLP_ENDPOINT; none is tracing off; a bad URL is refused', () => {
    expect(otlpEndpointFrom(undefined, {})).toBeUndefined();
    expect(otlpEndpointFrom(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' })).toBe(
      'http://127.0.0.1:4318',
    );
    expect(otlpEndpointFrom('http://collector:4318', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://other:4318' })).toBe(
      'http://collector:4318',
    );
    expect(() => otlpEndpointFrom('collector:4318', {})).toThrow(TracingSetupError);
  });
});

describe('spans', () => {
  it('with tracing off the node keeps only a context the client sent, makes no span, and forwards that context as it came', async () => {
    expect(await openTracing({ serviceName: 'x' })).toBe(NO_TRACING);
    const traces = new TxnTraces(NO_TRACING, 100);
    expect(traces.received('commit', 'T0', null)).toBeNull();
    expect(traces.size).toBe(0);
    expect(traces.received('commit', 'T1', PARENT)).toBeNull();
    expect(traces.contextOf('T1')).toEqual(PARENT);
    expect(traces.child('verdict.prepare', 'T1', {})).toBeNull();
    traces.forget(['T1']);
    expect(traces.size).toBe(0);
  });

  it("continue the caller's trace: Commit, PREPARE, the decision's replication and DECISION in one trace, each with its parent", async () => {
    // Its shutdown forgets what it holds; the provider's shutdown (which exports the last batch) calls it.
    const exporter = new (class extends InMemorySpanExporter {
      override shutdown(): Promise<void> {
        return Promise.resolve();
      }
    })();
    const tracing = await openTracing({ serviceName: 'verdict-node', exporter, exportDelayMs: 10 });
    const traces = new TxnTraces(tracing, 100);
    const commit = traces.received('commit', 'T1', PARENT);
    const prepare = traces.child('verdict.prepare', 'T1', { 'verdict.participant_id': 'p1' });
    prepare?.end();
    traces.proposing('T1', 'commit');
    traces.proposing('T1', 'commit'); // a re-proposal: the first span stays
    traces.applied('T1', 42);
    commit?.end();
    traces.child('verdict.decision', 'T1', {})?.end();
    traces.forget(['T1']);
    await tracing.shutdown();
    const spans = exporter.getFinishedSpans();
    const by = new Map(spans.map((s) => [s.name, s]));
    expect([...by.keys()].sort()).toEqual([
      'verdict.decision',
      'verdict.decision.replicate',
      'verdict.node.commit',
      'verdict.prepare',
    ]);
    expect(spans).toHaveLength(4);
    for (const s of spans) expect(s.spanContext().traceId).toBe(TRACE_ID);
    const commitId = by.get('verdict.node.commit')?.spanContext().spanId;
    expect(by.get('verdict.node.commit')?.parentSpanContext?.spanId).toBe(SPAN_ID);
    for (const n of ['verdict.prepare', 'verdict.decision.replicate', 'verdict.decision'])
      expect(by.get(n)?.parentSpanContext?.spanId, n).toBe(commitId);
    expect(by.get('verdict.decision.replicate')?.attributes['verdict.log_index']).toBe(42);
  });

  it('a receiver that takes the connection and never answers holds a stopping process at most about 2 s', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((s) => void sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const { port } = silent.address() as { port: number };
      const tracing = await openTracing({
        serviceName: 'x',
        otlpEndpoint: `http://127.0.0.1:${port}`,
        exportDelayMs: 10,
      });
      tracing.start('verdict.test', 'internal', PARENT)?.end();
      await new Promise((r) => setTimeout(r, 100));
      const startedAtMs = Date.now();
      await tracing.shutdown();
      const tookMs = Date.now() - startedAtMs;
      expect(sockets.length).toBeGreaterThan(0);
      expect(tookMs).toBeLessThan(4_000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('a context whose sampled flag is off is continued and passed on, and none of its spans is exported', async () => {
    const exporter = new (class extends InMemorySpanExporter {
      override shutdown(): Promise<void> {
        return Promise.resolve();
      }
    })();
    const tracing = await openTracing({ serviceName: 'verdict-node', exporter, exportDelayMs: 10 });
    const span = tracing.start('verdict.node.commit', 'server', { traceparent: `00-${TRACE_ID}-${SPAN_ID}-00` });
    expect(span?.traceId).toBe(TRACE_ID);
    expect(span?.context.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-00$`));
    span?.end();
    await tracing.shutdown();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('bounds what it remembers: past the bound the oldest context goes', async () => {
    const traces = new TxnTraces(NO_TRACING, 2);
    for (const id of ['A', 'B', 'C']) traces.received('commit', id, PARENT);
    expect(traces.size).toBe(2);
    expect(traces.contextOf('A')).toBeUndefined();
    expect(traces.contextOf('C')).toEqual(PARENT);
  });
});

describe('log lines', () => {
  it('a child logger bound to a key its parent has does not write the key twice ("node":"n4",…,"node":"n4")', () => {
    const { out, dest } = lines();
    const log = createLogger('info', { node: 'n4' }, 'json', dest);
    // The cause, as pino does it: a plain child repeats the key.
    log.child({ node: 'n4' }).info('plain child');
    childLogger(log, { component: 'transport', clusterId: 'c1', node: 'n4' }).info('transport line');
    expect(duplicateKeys(out[0])).toEqual(['node']);
    expect(duplicateKeys(out[1])).toEqual([]);
    expect(JSON.parse(out[1])).toMatchObject({
      node: 'n4',
      component: 'transport',
      clusterId: 'c1',
      msg: 'transport line',
    });
  });

  it('the duplicate-key check finds keys repeated at any depth, and only within one object', () => {
    expect(duplicateKeys('{"a":1,"b":{"c":1,"c":2},"a":"x,\\"a\\""}')).toEqual(['c', 'a']);
    expect(duplicateKeys('{"a":{"x":1},"b":{"x":1},"l":[{"x":1},{"x":2}]}')).toEqual([]);
  });

  it('a line about a transaction with a trace carries its trace id, in child loggers too; others are as written', () => {
    const { out, dest } = lines();
    const ids = new Map([['T1', TRACE_ID]]);
    const log = withTraceIds(createLogger('info', { node: 'n1' }, 'json', dest), (id) => ids.get(id));
    log.info({ txnId: 'T1', participantId: 'p1' }, 'participant voted NO');
    log.child({ component: 'x' }).warn({ txnId: 'T1' }, 'from a child');
    log.info({ txnId: 'T2' }, 'untraced');
    log.info('no fields');
    const parsed = out.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.map((o) => o.traceId)).toEqual([TRACE_ID, TRACE_ID, undefined, undefined]);
    for (const l of out) expect(duplicateKeys(l)).toEqual([]);
  });
});
