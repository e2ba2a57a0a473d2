// What every Verdict process (node or participant) serves for operators,
// beside its own services: the standard gRPC health service
// (grpc.health.v1.Health: Check, Watch, List), server reflection
// (grpc.reflection.v1 and v1alpha, so grpcurl and other stock clients can
// list and call the services without .proto files), and Prometheus text over
// plain HTTP.
//
// Health and reflection are the grpc-health-check and @grpc/reflection
// packages. Each brings its own copy of protobufjs 7 and proto-loader 0.7,
// which costs a restarting node a few hundred milliseconds of CPU before it
// can rejoin elections; so the services are registered at once from the
// packages' own .proto files (parsed by the proto-loader already in memory)
// and the packages are loaded on the first call, which is then handed to them.

import { createRequire } from 'node:module';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ServingStatus } from 'grpc-health-check';
import type { Registry } from 'prom-client';

const require = createRequire(import.meta.url);
const HEALTH_PROTO = join(dirname(require.resolve('grpc-health-check/package.json')), 'proto/health/v1/health.proto');
const REFLECTION_PROTO_DIR = join(
  dirname(require.resolve('@grpc/reflection/package.json')),
  'build/proto/grpc/reflection',
);
// The options each package loads its own copy with, so that messages have the shapes its handlers expect.
const HEALTH_LOAD: protoLoader.Options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
const REFLECTION_LOAD: protoLoader.Options = {
  longs: String,
  enums: String,
  bytes: Array,
  defaults: true,
  oneofs: true,
};

type Handler = grpc.UntypedHandleCall;

/** Calls `addToServer(capture)` of a package's service and keeps its handlers by method path. */
function captureHandlers(add: (server: Pick<grpc.Server, 'addService'>) => void): Map<string, Handler> {
  const byPath = new Map<string, Handler>();
  add({
    addService(def: grpc.ServiceDefinition, impl: grpc.UntypedServiceImplementation) {
      for (const [name, m] of Object.entries(def)) {
        const h = impl[name] ?? impl[(m as { originalName?: string }).originalName ?? ''];
        if (h) byPath.set(m.path, h);
      }
    },
  });
  return byPath;
}

/**
 * Registers every service of `pkgDef` on `server` with handlers that wait for
 * `load()` and hand the call to the package's handler for the same method.
 * A stream's messages wait in its buffer meanwhile.
 */
function addDelegated(
  server: grpc.Server,
  pkgDef: protoLoader.PackageDefinition,
  load: () => Promise<Map<string, Handler>>,
): void {
  for (const def of Object.values(pkgDef)) {
    if ('format' in def) continue; // a message or an enum, not a service
    const svc = def as protoLoader.ServiceDefinition;
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [name, m] of Object.entries(svc)) {
      impl[name] = ((call: unknown, cb?: unknown) => {
        void load().then(
          (handlers) => {
            const h = handlers.get(m.path) as ((call: unknown, cb?: unknown) => void) | undefined;
            if (h) h(call, cb);
            else fail(call, cb, `${m.path} is not implemented`);
          },
          (err: unknown) =>
            fail(call, cb, `${m.path} failed to load: ${err instanceof Error ? err.message : String(err)}`),
        );
      }) as Handler;
    }
    server.addService(svc as unknown as grpc.ServiceDefinition, impl);
  }
}

function fail(call: unknown, cb: unknown, details: string): void {
  const status = { code: 13 /* INTERNAL */, details };
  if (typeof cb === 'function') (cb as (e: unknown) => void)(status);
  else (call as { destroy?: (e: unknown) => void; emit: (ev: string, e: unknown) => void }).emit('error', status);
}

export interface Health {
  /** Sets the overall status ("" service) and that of every named service. */
  set(status: Extract<ServingStatus, 'SERVING' | 'NOT_SERVING'>): void;
  readonly status: ServingStatus;
}

/**
 * Adds grpc.health.v1.Health to `server`, answering for the whole server
 * (service "") and for each of `services`; NOT_SERVING until set() says
 * otherwise.
 */
export function addHealth(server: grpc.Server, services: readonly string[]): Health {
  const names = ['', ...services];
  let status: ServingStatus = 'NOT_SERVING';
  let impl: { setStatus(service: string, s: ServingStatus): void } | null = null;
  let loading: Promise<Map<string, Handler>> | null = null;
  const load = (): Promise<Map<string, Handler>> =>
    (loading ??= import('grpc-health-check').then(({ HealthImplementation }) => {
      const h = new HealthImplementation(Object.fromEntries(names.map((n) => [n, status])));
      impl = h;
      return captureHandlers((s) => h.addToServer(s as grpc.Server));
    }));
  addDelegated(server, protoLoader.loadSync(HEALTH_PROTO, HEALTH_LOAD), load);
  return {
    set(s) {
      status = s;
      for (const n of names) impl?.setStatus(n, s);
    },
    get status() {
      return status;
    },
  };
}

/**
 * Adds grpc.reflection.v1 and v1alpha to `server`, describing the given
 * proto packages and the health service.
 */
export function addReflection(server: grpc.Server, packages: readonly protoLoader.PackageDefinition[]): void {
  let loading: Promise<Map<string, Handler>> | null = null;
  const load = (): Promise<Map<string, Handler>> =>
    (loading ??= import('@grpc/reflection').then(({ ReflectionService }) => {
      const health = protoLoader.loadSync(HEALTH_PROTO, HEALTH_LOAD);
      const described: protoLoader.PackageDefinition = Object.assign({}, health, ...packages);
      const r = new ReflectionService(described);
      return captureHandlers((s) => r.addToServer(s));
    }));
  for (const v of ['v1', 'v1alpha'])
    addDelegated(
      server,
      protoLoader.loadSync(join(REFLECTION_PROTO_DIR, v, 'reflection.proto'), REFLECTION_LOAD),
      load,
    );
}

/** An HTTP(S) listener of this process: metrics, or a node's console. */
export interface HttpListener {
  /** host:port actually bound (the real port when listen asked for 0). */
  address: string;
  close(): Promise<void>;
}

export type MetricsServer = HttpListener;

/**
 * Binds `server` to `listen` (host:port, an IPv6 host in brackets). A bind
 * that fails rejects with `refuse(why)`, `why` in words a person can act on;
 * idle keep-alive connections never hold up close().
 */
export function listenHttp(server: Server, listen: string, refuse: (why: string) => Error): Promise<HttpListener> {
  const cut = listen.lastIndexOf(':');
  const host = listen.slice(0, cut).replace(/^\[(.*)\]$/, '$1');
  const port = Number(listen.slice(cut + 1));
  server.keepAliveTimeout = 5_000;
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why =
        err.code === 'EADDRINUSE'
          ? 'the address is in use; pick another port'
          : err.code === 'EADDRNOTAVAIL'
            ? `${host} is not an address of this machine`
            : err.code === 'EACCES'
              ? 'permission denied; pick a port above 1023'
              : err.message;
      reject(refuse(why));
    });
    server.listen(port, host, () => {
      const a = server.address() as AddressInfo;
      resolve({
        address: `${listen.slice(0, cut)}:${a.port}`,
        close: () =>
          new Promise<void>((res) => {
            server.close(() => res());
            server.closeAllConnections();
          }),
      });
    });
  });
}

/** Why an HTTP listen failed, in words a person can act on (the caller names the setting). */
export class MetricsListenError extends Error {
  constructor(
    readonly listen: string,
    readonly why: string,
  ) {
    super(`cannot listen on ${listen} for metrics: ${why}`);
    this.name = 'MetricsListenError';
  }
}

/**
 * Serves Prometheus text at GET /metrics on `listen` (host:port). `registry`
 * may be a function: until it returns a registry (the process is still
 * starting) a scrape gets 503.
 */
export function serveMetrics(
  listen: string,
  registry: Registry | (() => Registry | null),
  /** Answers other paths first (a node's web console, src/console/api.ts): true when it took the request. */
  also?: (req: IncomingMessage, res: ServerResponse) => boolean,
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' && also?.(req, res) === true) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: metrics are at /metrics\n');
      return;
    }
    const r = typeof registry === 'function' ? registry() : registry;
    if (r === null) {
      res
        .writeHead(503, { 'Content-Type': 'text/plain', 'Retry-After': '1' })
        .end('starting: metrics are not ready yet\n');
      return;
    }
    r.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': r.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) =>
        res
          .writeHead(500, { 'Content-Type': 'text/plain' })
          .end(`metrics collection failed: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  });
  return listenHttp(server, listen, (why) => new MetricsListenError(listen, why));
}
