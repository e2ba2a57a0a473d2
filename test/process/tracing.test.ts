// One transaction followed across three kinds of process: the application
// (the SDK in this test process), a three-node cluster and a participant
// process, each exporting its spans over OTLP/HTTP to a receiver this test
// runs on 127.0.0.1. Every span of the transaction must carry the
// application's trace id, each with the parent the path implies; the node
// and participant logs must carry the trace id on their lines about the
// transaction, and no JSON log line may repeat a key.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { VerdictClient } from '../../src/client/index.ts';
import { startStepService, type StepService } from '../../src/saga/step-service.ts';
import { BIN, Cluster, freePorts, ROOT, tempDir, useProcessCleanup, waitFor } from './harness.ts';
import { duplicateKeys } from '../unit/json-keys.ts';
import { FAULT_POINT_ENV } from '../../src/node/fault-point.ts';

useProcessCleanup();

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  service: string;
  attributes: Record<string, unknown>;
}

interface Receiver {
  url: string;
  spans: OtlpSpan[];
  close(): Promise<void>;
}

/** An OTLP/HTTP receiver for JSON payloads (what @opentelemetry/exporter-trace-otlp-http posts to /v1/traces). */
async function otlpReceiver(): Promise<Receiver> {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      if (req.url !== '/v1/traces' || !/json/.test(req.headers['content-type'] ?? '')) {
        res.writeHead(415).end();
        return;
      }
      const payload = JSON.parse(body) as {
        resourceSpans: {
          resource: { attributes: Attr[] };
          scopeSpans: { spans: (Omit<OtlpSpan, 'service' | 'attributes'> & { attributes?: Attr[] })[] }[];
        }[];
      };
      for (const rs of payload.resourceSpans) {
        const service = String(attrs(rs.resource.attributes)['service.name']);
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans) spans.push({ ...s, service, attributes: attrs(s.attributes ?? []) });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the receiver has no port');
  return { url: `http://127.0.0.1:${address.port}`, spans, close: () => new Promise((r) => server.close(() => r())) };
}

type Attr = { key: string; value: Record<string, unknown> };
function attrs(list: Attr[]): Record<string, unknown> {
  return Object.fromEntries(list.map((a) => [a.key, Object.values(a.value)[0]]));
}

const receivers: Receiver[] = [];
const children: ChildProcess[] = [];
const stepServices: StepService[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await Promise.all(stepServices.splice(0).map((s) => s.stop()));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

/**
 * A `verdict participant` process (memory resource) exporting spans to `receiver`; its stderr (JSON log lines) is
 * collected.
 */
async function startShop(c: Cluster, receiver: Receiver): Promise<{ stderr: string }> {
  const [port] = await freePorts(1);
  const out = { stderr: '' };
  const child = spawn(
    process.execPath,
    [
      BIN,
      'participant',
      '--id',
      'shop',
      '--listen',
      `127.0.0.1:${port}`,
      '--data',
      join(tempDir(), 'data'),
      '--cluster-id',
      c.clusterId,
      '--endpoints',
      c.nodes.map((n) => n.address).join(','),
      '--insecure',
      '--log-level',
      'debug',
    ],
    {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env,
        VERDICT_LOG_FORMAT: 'json',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '200',
      },
    },
  );
  children.push(child);
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
  return out;
}

const APP_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const APP_SPAN_ID = '00f067aa0ba902b7';

describe('tracing across the client, the nodes and a participant', () => {
  it('one transaction: every span shares the trace id of the application, each child of the hop before it; log lines carry the trace id, no key twice', async () => {
    const receiver = await otlpReceiver();
    receivers.push(receiver);
    process.env.OTEL_BSP_SCHEDULE_DELAY = '200';
    const c = await Cluster.create({
      nodes: 3,
      logLevel: 'debug',
      configExtra: () => ({ otlpEndpoint: receiver.url }),
    });
    // n3 starts late, so that n1 and n2 log about a peer they cannot reach: the transport's lines are
    // the ones that carried "node" twice.
    c.node('n1').start();
    c.node('n2').start();
    await waitFor('a transport line about the missing peer', 60_000, async () =>
      ['n1', 'n2'].some((id) => readFileSync(c.node(id).logFile, 'utf8').includes('stream to peer ended'))
        ? true
        : undefined,
    );
    c.node('n3').start();
    const { node: leader } = await c.waitForLeader();

    const shop = await startShop(c, receiver);
    const participantErr = (): string => shop.stderr;

    const client = new VerdictClient({
      endpoints: c.nodes.map((n) => n.address),
      insecure: true,
      otlpEndpoint: receiver.url,
    });
    try {
      await waitFor(
        'the participant to register',
        60_000,
        async () => ((await client.participants()).some((p) => p.participantId === 'shop') ? true : undefined),
        () => participantErr().slice(-2_000),
      );
      const trace = { traceparent: `00-${APP_TRACE_ID}-${APP_SPAN_ID}-01` };
      const txn = await client.begin({ timeoutMs: 10_000 }, { trace });
      txn.enlist('shop', { set: { greeting: 'hello' } });
      const result = await txn.commit({ awaitAcks: { timeoutMs: 30_000 } });
      expect(result.outcome).toBe('COMMITTED');
      await client.close();

      const names = [
        'verdict.begin',
        'verdict.commit',
        'verdict.node.begin',
        'verdict.node.commit',
        'verdict.prepare',
        'verdict.participant.prepare',
        'verdict.decision.replicate',
        'verdict.decision',
        'verdict.participant.decision',
      ];
      const byName = await waitFor(
        'every span of the transaction at the receiver',
        30_000,
        async () => {
          const mine = receiver.spans.filter((s) => s.attributes['verdict.txn_id'] === txn.txnId);
          const m = new Map(mine.map((s) => [s.name, s]));
          return names.every((n) => m.has(n)) ? m : undefined;
        },
        () => `have ${receiver.spans.map((s) => `${s.service}:${s.name}`).join(', ')}`,
      );
      const span = (name: string): OtlpSpan => byName.get(name) as OtlpSpan;
      for (const n of names) expect(span(n).traceId, n).toBe(APP_TRACE_ID);
      // Three kinds of process made them.
      expect(new Set(names.map((n) => span(n).service))).toEqual(
        new Set(['verdict-client', 'verdict-node', 'verdict-participant']),
      );
      // The parent links: application → client → leader → participant.
      const parentOf = (name: string): string | undefined => span(name).parentSpanId;
      expect(parentOf('verdict.begin')).toBe(APP_SPAN_ID);
      expect(parentOf('verdict.commit')).toBe(APP_SPAN_ID);
      expect(parentOf('verdict.node.begin')).toBe(span('verdict.begin').spanId);
      expect(parentOf('verdict.node.commit')).toBe(span('verdict.commit').spanId);
      expect(parentOf('verdict.prepare')).toBe(span('verdict.node.commit').spanId);
      expect(parentOf('verdict.participant.prepare')).toBe(span('verdict.prepare').spanId);
      expect(parentOf('verdict.decision.replicate')).toBe(span('verdict.node.commit').spanId);
      expect(parentOf('verdict.decision')).toBe(span('verdict.node.commit').spanId);
      expect(parentOf('verdict.participant.decision')).toBe(span('verdict.decision').spanId);
      expect(span('verdict.prepare').attributes['verdict.vote']).toBe('yes');
      expect(span('verdict.participant.prepare').attributes['verdict.vote']).toBe('yes');
      expect(span('verdict.decision.replicate').attributes['verdict.outcome']).toBe('commit');

      // Logs: JSON lines with no key twice, on every node and the participant.
      const jsonLines = (text: string): string[] => text.split('\n').filter((l) => l.startsWith('{'));
      const all = [...c.nodes.map((n) => readFileSync(n.logFile, 'utf8')), participantErr()].flatMap(jsonLines);
      expect(all.length).toBeGreaterThan(10);
      expect(all.some((l) => l.includes('"component":"transport"'))).toBe(true);
      for (const l of all) expect(duplicateKeys(l), l).toEqual([]);
      // Every line about the transaction carries its trace id: the leader's, the participant's, and
      // the followers' (they learn the context from the decision's log record).
      const about = (text: string): Record<string, unknown>[] =>
        jsonLines(text)
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .filter((o) => o.txnId === txn.txnId);
      const leaderLines = about(readFileSync(leader.logFile, 'utf8'));
      const participantLines = about(participantErr());
      expect(leaderLines.length, 'leader log lines about the transaction').toBeGreaterThan(0);
      expect(participantLines.length, 'participant log lines about the transaction').toBeGreaterThan(0);
      const followerLines = await waitFor('a line about the transaction on each follower', 30_000, async () => {
        const each = c.nodes.filter((n) => n.id !== leader.id).map((n) => about(readFileSync(n.logFile, 'utf8')));
        return each.every((lines) => lines.some((o) => o.msg === 'decision applied')) ? each.flat() : undefined;
      });
      for (const o of [...leaderLines, ...participantLines, ...followerLines])
        expect(o.traceId, JSON.stringify(o)).toBe(APP_TRACE_ID);
    } finally {
      await client.close();
    }
  });

  it("after the leader dies between its answer and the decision, the new leader's DECISION continues the application's trace", async () => {
    const receiver = await otlpReceiver();
    receivers.push(receiver);
    process.env.OTEL_BSP_SCHEDULE_DELAY = '200';
    const c = await Cluster.create({
      nodes: 3,
      logLevel: 'debug',
      configExtra: () => ({ otlpEndpoint: receiver.url }),
    });
    // The leader answers COMMITTED by parallel commit's implied rule and SIGKILLs itself before it
    // proposes the decision: only the STAGING record (with the trace context) is in the log.
    process.env[FAULT_POINT_ENV] = 'crash-before-explicit-commit';
    try {
      for (const n of c.nodes) n.start();
    } finally {
      delete process.env[FAULT_POINT_ENV];
    }
    const { node: leader } = await c.waitForLeader();
    const shop = await startShop(c, receiver);
    const client = new VerdictClient({
      endpoints: c.nodes.map((n) => n.address),
      insecure: true,
      callTimeoutMs: 30_000,
    });
    try {
      await waitFor(
        'the participant to register',
        60_000,
        async () => ((await client.participants()).some((p) => p.participantId === 'shop') ? true : undefined),
        () => shop.stderr.slice(-2_000),
      );
      const trace = { traceparent: `00-${APP_TRACE_ID}-${APP_SPAN_ID}-01` };
      const txn = await client.begin({ timeoutMs: 20_000, parallelCommit: true }, { trace });
      txn.enlist('shop', { set: { k: 'v' } });
      expect((await txn.commit()).outcome).toBe('COMMITTED');
      await waitFor('the leader to be SIGKILLed by its fault point', 30_000, async () =>
        leader.lastExit?.signal === 'SIGKILL' ? true : undefined,
      );
      const { node: next } = await c.waitForLeader({ notId: leader.id });
      const [decision, applied] = await waitFor(
        "the new leader's DECISION span and the participant's span under it",
        60_000,
        async () => {
          const mine = receiver.spans.filter((x) => x.attributes['verdict.txn_id'] === txn.txnId);
          const d = mine.find((x) => x.name === 'verdict.decision' && x.attributes['verdict.outcome'] === 'commit');
          const p = d && mine.find((x) => x.name === 'verdict.participant.decision' && x.parentSpanId === d.spanId);
          return d && p ? [d, p] : undefined;
        },
        () => `have ${receiver.spans.map((x) => `${x.service}:${x.name}`).join(', ')}`,
      );
      expect([decision.traceId, applied.traceId]).toEqual([APP_TRACE_ID, APP_TRACE_ID]);
      // Its parent is the old leader's span for the client's Commit, whose context the STAGING record carried.
      expect(decision.parentSpanId).not.toBe(APP_SPAN_ID);
      const oldCommit = receiver.spans.find(
        (x) => x.name === 'verdict.node.commit' && x.attributes['verdict.txn_id'] === txn.txnId,
      );
      if (oldCommit !== undefined) expect(decision.parentSpanId).toBe(oldCommit.spanId);
      // The new leader's lines about the transaction carry the trace id too.
      const lines = readFileSync(next.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((o) => o.txnId === txn.txnId);
      expect(lines.length).toBeGreaterThan(0);
      for (const o of lines) expect(o.traceId, JSON.stringify(o)).toBe(APP_TRACE_ID);
    } finally {
      await client.close();
    }
  });

  it("a saga: StartSaga and each step call are spans of the starter's trace", async () => {
    const receiver = await otlpReceiver();
    receivers.push(receiver);
    process.env.OTEL_BSP_SCHEDULE_DELAY = '200';
    const c = await Cluster.start({ nodes: 1, configExtra: () => ({ otlpEndpoint: receiver.url }) });
    await c.waitForLeader();
    const [port] = await freePorts(1);
    const flight = await startStepService({
      clusterId: c.clusterId,
      serviceId: 'flight',
      listen: `127.0.0.1:${port}`,
      endpointsOfCluster: c.nodes.map((n) => n.address),
      dataDir: join(tempDir(), 'flight'),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 200,
      handlers: {
        book: {
          action: (req) => ({ status: 'done', output: `seat-${req.sagaId}`, effect: 'book' }),
          compensate: () => ({ status: 'done', output: '', effect: 'cancel' }),
        },
      },
    });
    stepServices.push(flight);
    await flight.registered;
    const client = new VerdictClient({ endpoints: c.nodes.map((n) => n.address), insecure: true });
    try {
      const handle = await client.saga({
        steps: [{ service: 'flight', name: 'book', input: 'x' }],
        trace: { traceparent: `00-${APP_TRACE_ID}-${APP_SPAN_ID}-01` },
      });
      expect((await handle.result()).end).toBe('finished');
      const [start, action] = await waitFor(
        'the saga spans at the receiver',
        30_000,
        async () => {
          const mine = receiver.spans.filter((x) => x.attributes['verdict.saga_id'] === handle.id);
          const s = mine.find((x) => x.name === 'verdict.node.saga.start');
          const a = mine.find((x) => x.name === 'verdict.saga.action');
          return s && a ? [s, a] : undefined;
        },
        () => `have ${receiver.spans.map((x) => x.name).join(', ')}`,
      );
      expect([start.traceId, action.traceId]).toEqual([APP_TRACE_ID, APP_TRACE_ID]);
      expect(start.parentSpanId).toBe(APP_SPAN_ID);
      expect(action.parentSpanId).toBe(start.spanId);
      expect(action.attributes).toMatchObject({
        'verdict.step_name': 'book',
        'verdict.service': 'flight',
        'verdict.step_status': 'STEP_DONE',
      });
    } finally {
      await client.close();
    }
  });
});
