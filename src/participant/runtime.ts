// The real participant process: the journal on disk, the memory resource and
// the engine rebuilt from it, `verdict.participant.Participant` served over
// gRPC, registration with the cluster, and the in-doubt recovery loop asking
// Coordinator.GetOutcome. The engine holds every protocol decision; this file
// only wires real time, disk and network to it.
import { mkdir, readFile, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import {
  PARTICIPANT_MESSAGE_BYTES_MAX,
  participantService,
  type ParticipantHandlers,
} from '../transport/participant-rpc.ts';
import { ClusterLink, toClusterOutcome } from './cluster-link.ts';
import { ParticipantEngine, type EngineOptions } from './engine.ts';
import { FileJournal } from './journal.ts';
import { MemoryResource, PAYLOAD_BYTES_MAX } from './memory.ts';
import { MemoryState } from './memory-state.ts';
import { isParticipantRecord, ParticipantError, type ParticipantRecord, type Schedule } from './types.ts';

export interface ParticipantOptions {
  clusterId: string;
  participantId: string;
  /** host:port to serve on; port 0 picks a free one. */
  listen: string;
  /** Where the cluster reaches this participant; defaults to listen's host with the bound port. */
  advertise?: string;
  endpointsOfCluster: string[];
  dataDir: string;
  logger: Logger;
  /** Delay between registration attempts until one succeeds. */
  registerRetryMs?: number;
  compactAfterRecords?: number;
  /** Engine bounds and timings (inDoubtAfterMs, askBackoffMinMs, ...). */
  engine?: Partial<Omit<EngineOptions, 'clusterId' | 'participantId' | 'resource' | 'journal' | 'clock' | 'schedule' | 'askOutcome' | 'log'>>;
}

export interface ParticipantRuntime {
  /** host:port the participant serves on (the bound port, even when listen asked for 0). */
  address: string;
  engine: ParticipantEngine;
  resource: MemoryResource;
  /** Resolves once the cluster has accepted the registration. */
  registered: Promise<void>;
  stop(): Promise<void>;
}

/** A refusal to start, with a reason a person can act on; the CLI prints it as one line. */
export class ParticipantStartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ParticipantStartupError';
  }
}

const TXN_ID_CHARS_MAX = 256;
const IDENTITY_FILE = 'participant.json';

export async function startParticipant(o: ParticipantOptions): Promise<ParticipantRuntime> {
  const log = o.logger.child({ participant: o.participantId, clusterId: o.clusterId });
  if (o.clusterId === '' || o.participantId === '') throw new ParticipantStartupError('cluster id and participant id must not be empty');
  if (o.endpointsOfCluster.length === 0) throw new ParticipantStartupError('at least one cluster endpoint is needed');
  await mkdir(o.dataDir, { recursive: true });
  await checkIdentity(o.dataDir, o.clusterId, o.participantId);

  const state = new MemoryState();
  const journal = await FileJournal.open<ParticipantRecord>({
    path: join(o.dataDir, 'journal.log'),
    fold: state,
    isRecord: isParticipantRecord,
    compactAfterRecords: o.compactAfterRecords,
    log,
  });
  const resource = MemoryResource.restore(state.data, state.preparedWrites());
  const link = new ClusterLink({ clusterId: o.clusterId, endpoints: o.endpointsOfCluster });
  const timers = new Set<NodeJS.Timeout>();
  const schedule: Schedule = (delayMs, fn) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, delayMs);
    timers.add(t);
    return () => {
      clearTimeout(t);
      timers.delete(t);
    };
  };
  const engine = new ParticipantEngine({
    ...o.engine,
    clusterId: o.clusterId,
    participantId: o.participantId,
    resource,
    journal,
    clock: { nowMs: () => Date.now() },
    schedule,
    askOutcome: (txnId, cb) =>
      link.outcome(txnId, o.participantId).then(
        (r) => cb(null, toClusterOutcome(r.outcome)),
        (err: Error) => cb(err, 'unknown'),
      ),
    log,
  });
  engine.recover(state.txnRecords());

  const server = new grpc.Server({
    'grpc.max_receive_message_length': PARTICIPANT_MESSAGE_BYTES_MAX,
    'grpc.max_send_message_length': PARTICIPANT_MESSAGE_BYTES_MAX,
  });
  server.addService(participantService, handlers(engine));
  let port: number;
  try {
    port = await bind(server, o.listen);
  } catch (err) {
    await journal.close();
    link.close();
    throw err;
  }
  const address = `${o.listen.slice(0, o.listen.lastIndexOf(':'))}:${port}`;
  const advertise = o.advertise ?? address;
  engine.start();
  log.info({ address, advertise, inDoubt: engine.inDoubt().length, journal: journal.stats() }, 'participant started');

  // Registration: retried until the cluster accepts it, one attempt at a time.
  let stopping = false;
  let attempts = 0;
  const retryMs = o.registerRetryMs ?? 1_000;
  const registered = new Promise<void>((resolve) => {
    const attempt = (): void => {
      if (stopping) return;
      attempts += 1;
      link.register(o.participantId, advertise).then(
        () => {
          log.info({ endpoint: advertise, attempts }, 'registered with the cluster');
          resolve();
        },
        (err: Error) => {
          if (stopping) return;
          if (attempts === 1 || attempts % 10 === 0) log.warn({ attempts, err: err.message, retryMs }, 'registration with the cluster failed; retrying');
          schedule(retryMs, attempt);
        },
      );
    };
    attempt();
  });

  let stopped: Promise<void> | null = null;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      stopping = true;
      engine.stop();
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await shutdown(server);
      link.close();
      await journal.close();
      log.info('participant stopped');
    })());

  return { address, engine, resource, registered, stop };
}

/** gRPC handlers: validate, hand to the engine, map its errors to status codes with reasons. */
function handlers(engine: ParticipantEngine): ParticipantHandlers {
  const fail = (cb: grpc.sendUnaryData<never>, err: ParticipantError): void =>
    cb({ code: grpc.status[err.code], details: err.message, name: err.name, message: err.message, metadata: new grpc.Metadata() });
  return {
    Prepare: (call, cb) => {
      const req = call.request;
      const bad = badTxnId(req.txnId) ?? (req.payload.byteLength > PAYLOAD_BYTES_MAX ? `payload is larger than ${PAYLOAD_BYTES_MAX} bytes` : null);
      if (bad !== null) return fail(cb, new ParticipantError('INVALID_ARGUMENT', bad));
      engine.prepare(req, (err, vote) => (err !== null ? fail(cb, err) : cb(null, vote)));
    },
    Decide: (call, cb) => {
      const req = call.request;
      const bad = badTxnId(req.txnId);
      if (bad !== null) return fail(cb, new ParticipantError('INVALID_ARGUMENT', bad));
      engine.decide(req, (err, ack) => (err !== null ? fail(cb, err) : cb(null, ack)));
    },
  };
}

function badTxnId(txnId: string): string | null {
  if (txnId === '') return 'txn_id is empty';
  if (txnId.length > TXN_ID_CHARS_MAX) return `txn_id is longer than ${TXN_ID_CHARS_MAX} characters`;
  return null;
}

/** R7: a data directory belongs to one (cluster id, participant id); another identity is refused before anything is touched. */
async function checkIdentity(dataDir: string, clusterId: string, participantId: string): Promise<void> {
  const path = join(dataDir, IDENTITY_FILE);
  let text: string | null = null;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (text === null) {
    const tmp = `${path}.tmp`;
    await writeFile(tmp, `${JSON.stringify({ clusterId, participantId })}\n`, { flush: true });
    await rename(tmp, path);
    return;
  }
  let id: { clusterId?: unknown; participantId?: unknown };
  try {
    id = JSON.parse(text) as typeof id;
  } catch {
    throw new ParticipantStartupError(`${path} is not valid JSON; it names the participant this data directory belongs to`);
  }
  if (id.clusterId !== clusterId || id.participantId !== participantId) {
    throw new ParticipantStartupError(
      `data directory ${dataDir} belongs to participant "${String(id.participantId)}" of cluster "${String(id.clusterId)}", not "${participantId}" of "${clusterId}"; use another --data directory`,
    );
  }
}

function bind(server: grpc.Server, listen: string): Promise<number> {
  return new Promise((resolve, reject) => {
    if (!/^.+:\d+$/.test(listen)) return reject(new ParticipantStartupError(`listen address "${listen}" is not HOST:PORT`));
    server.bindAsync(listen, grpc.ServerCredentials.createInsecure(), (err, port) => {
      if (!err) return resolve(port);
      const why = /EADDRINUSE/.test(err.message) ? 'the address is in use; pick another port' : err.message.replace(/\s+/g, ' ');
      reject(new ParticipantStartupError(`cannot listen on ${listen}: ${why}`));
    });
  });
}

/** Lets calls in flight finish for a moment, then cuts the rest. */
function shutdown(server: grpc.Server, graceMs = 2_000): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(t);
      resolve();
    });
  });
}
