// Stock clients for what operators use, as their tools would use it: an HTTP
// scrape parsed as Prometheus text, grpc.health.v1.Health and server
// reflection loaded from the standard .proto files (not from Verdict's code),
// plus in-process participants and a participant that never ACKs.

import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { startParticipant, type ParticipantRuntime } from '../../src/participant/runtime.ts';
import { participantService, type ParticipantHandlers } from '../../src/transport/participant-rpc.ts';
import { freePorts, type Cluster } from './harness.ts';

const require = createRequire(import.meta.url);
const HEALTH_PROTO = join(dirname(require.resolve('grpc-health-check/package.json')), 'proto/health/v1/health.proto');
const REFLECTION_PROTO = join(
  dirname(require.resolve('@grpc/reflection/package.json')),
  'build/proto/grpc/reflection/v1/reflection.proto',
);
const LOAD: protoLoader.Options = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true };

// ---- Prometheus text ----

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text exposition format (what /metrics serves) into samples. */
export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]) });
  }
  return out;
}

export async function scrape(address: string): Promise<{ text: string; samples: Sample[]; contentType: string }> {
  const res = await fetch(`http://${address}/metrics`, { signal: AbortSignal.timeout(5_000) });
  if (res.status !== 200) throw new Error(`GET http://${address}/metrics answered ${res.status}`);
  const text = await res.text();
  return { text, samples: parsePrometheus(text), contentType: res.headers.get('content-type') ?? '' };
}

/** The value of one sample; throws (naming what exists) when it is absent. */
export function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  if (!s)
    throw new Error(
      `no sample ${name}${JSON.stringify(labels)}; verdict_ names present: ${[...new Set(samples.map((x) => x.name).filter((n) => n.startsWith('verdict_') && !n.includes('process') && !n.includes('nodejs')))].join(', ')}`,
    );
  return s.value;
}

// ---- gRPC health and reflection, from the standard protos ----

interface GenericClient extends grpc.Client {
  [method: string]: unknown;
}

function stockClient(protoPath: string, service: string, address: string): GenericClient {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(protoPath, LOAD));
  let ctor: unknown = pkg;
  for (const part of service.split('.')) ctor = (ctor as Record<string, unknown>)[part];
  return new (ctor as new (address: string, creds: grpc.ChannelCredentials) => GenericClient)(
    address,
    grpc.credentials.createInsecure(),
  );
}

/** grpc.health.v1.Health/Check for `service` ('' is the whole server). */
/** A fresh client may share a subchannel still in reconnect backoff: wait until it is connected. */
function ready(c: grpc.Client): Promise<void> {
  return new Promise((resolve, reject) => c.waitForReady(Date.now() + 5_000, (err) => (err ? reject(err) : resolve())));
}

export async function healthCheck(address: string, service = ''): Promise<string> {
  const c = stockClient(HEALTH_PROTO, 'grpc.health.v1.Health', address);
  try {
    await ready(c);
    return await new Promise<string>((resolve, reject) => {
      (
        c.check as (
          req: unknown,
          opts: grpc.CallOptions,
          cb: (err: grpc.ServiceError | null, res?: { status: string }) => void,
        ) => void
      )({ service }, { deadline: Date.now() + 5_000 }, (err, res) => (err ? reject(err) : resolve(res?.status ?? '')));
    });
  } finally {
    c.close();
  }
}

interface ReflectionResponse {
  listServicesResponse?: { service: { name: string }[] } | null;
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] } | null;
  errorResponse?: { errorCode: number; errorMessage: string } | null;
}

/** One request on grpc.reflection.v1.ServerReflection/ServerReflectionInfo. */
export async function reflect(
  address: string,
  request: { listServices: string } | { fileContainingSymbol: string },
): Promise<ReflectionResponse> {
  const c = stockClient(REFLECTION_PROTO, 'grpc.reflection.v1.ServerReflection', address);
  try {
    await ready(c);
    return await new Promise<ReflectionResponse>((resolve, reject) => {
      const call = (
        c.serverReflectionInfo as (opts: grpc.CallOptions) => grpc.ClientDuplexStream<unknown, ReflectionResponse>
      )({ deadline: Date.now() + 5_000 });
      call.once('data', (r: ReflectionResponse) => {
        resolve(r);
        call.end();
      });
      call.once('error', reject);
      call.write(request);
    });
  } finally {
    c.close();
  }
}

// ---- participants ----

export interface Participants {
  runtimes: Map<string, ParticipantRuntime>;
  stop(): Promise<void>;
}

/**
 * Journaled memory participants in this process, registered with the
 * cluster. `metrics`: each serves /metrics too; `lockWaitMs`: their lock
 * wait (src/participant/runtime.ts; 0 votes NO on a locked key at once).
 */
export async function startParticipants(
  c: Cluster,
  ids: string[],
  o: { metrics?: boolean; lockWaitMs?: number } = {},
): Promise<Participants> {
  const ports = await freePorts(2 * ids.length);
  const dir = mkdtempSync(join(tmpdir(), 'verdict-ops-participants-'));
  const runtimes = new Map<string, ParticipantRuntime>();
  for (const [i, id] of ids.entries()) {
    const p = await startParticipant({
      clusterId: c.clusterId,
      participantId: id,
      listen: `127.0.0.1:${ports[i]}`,
      metricsListen: o.metrics ? `127.0.0.1:${ports[ids.length + i]}` : undefined,
      endpointsOfCluster: c.nodes.map((n) => n.address),
      dataDir: join(dir, id),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 200,
      // Ask the cluster soon about a prepared transaction nobody decided.
      engine: { inDoubtAfterMs: 1_000, sweepIntervalMs: 250 },
      ...(o.lockWaitMs !== undefined ? { lockWaitMs: o.lockWaitMs } : {}),
    });
    runtimes.set(id, p);
  }
  await Promise.all([...runtimes.values()].map((p) => p.registered));
  return {
    runtimes,
    stop: async () => {
      for (const p of runtimes.values()) await p.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A participant that votes YES and never acknowledges a DECISION: its transactions stay committed-but-unacked. */
export async function startUnackingParticipant(): Promise<{ address: string; decisions: number; stop(): void }> {
  const server = new grpc.Server();
  const state = { decisions: 0 };
  const handlers: ParticipantHandlers = {
    Prepare: (call, cb) =>
      cb(null, {
        txnId: call.request.txnId,
        participantId: call.request.participantId,
        vote: 'VOTE_YES',
        reason: '',
        reserveTtlMs: 0,
      }),
    Decide: (_call, cb) => {
      state.decisions++;
      cb({ code: grpc.status.UNAVAILABLE, details: 'this test participant never acknowledges' });
    },
  };
  server.addService(participantService, handlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    address: `127.0.0.1:${port}`,
    get decisions() {
      return state.decisions;
    },
    stop: () => server.forceShutdown(),
  };
}
