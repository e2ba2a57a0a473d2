// Spans for one transaction's path (client → nodes → participants),
// exported over OTLP/HTTP when an endpoint is configured, and nothing at all
// otherwise: NO_TRACING starts no span and allocates nothing, and
// OpenTelemetry's packages are loaded only by openTracing(), so a process
// that never configures an endpoint never needs them installed.
//
// The interface is Verdict's own, small on purpose: the node, the
// participant runtime and the SDK start spans through it at their edges;
// the pure layers (src/commit, src/raft) never see it.
import type { TraceContext } from './trace-context.ts';
import { formatTraceparent, parseTraceparent, traceContext } from './trace-context.ts';

export type SpanKindName = 'server' | 'client' | 'internal';
export type SpanValue = string | number | boolean;

export interface TraceSpan {
  /** The context a child of this span (in this process or the next) continues. */
  readonly context: TraceContext;
  readonly traceId: string;
  set(key: string, value: SpanValue): void;
  /** Ends the span; with `error`, its status is ERROR with that text. Later calls do nothing. */
  end(error?: string): void;
}

export interface Tracing {
  /** False: start() always answers null; callers skip building a span's attributes. */
  readonly on: boolean;
  /** A new span, child of `parent` (a root span without one). */
  start(
    name: string,
    kind: SpanKindName,
    parent: TraceContext | undefined,
    attributes?: Record<string, SpanValue>,
  ): TraceSpan | null;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

export const NO_TRACING: Tracing = {
  on: false,
  start: () => null,
  shutdown: async () => {},
};

/** An exporter as OpenTelemetry's SDK takes it (a test hands in an in-memory one). */
export type SpanExporterLike = object;

export interface TracingOptions {
  /** service.name of every span (e.g. `verdict-node`, `verdict-participant`). */
  serviceName: string;
  /** service.instance.id (a node id, a participant id). */
  instanceId?: string;
  /** OTLP/HTTP base URL, e.g. http://127.0.0.1:4318; spans go to `<url>/v1/traces`. */
  otlpEndpoint?: string;
  /** Instead of OTLP: an OpenTelemetry SpanExporter. */
  exporter?: SpanExporterLike;
  /** How long spans wait to be exported in a batch; OTEL_BSP_SCHEDULE_DELAY, else 1000 ms. */
  exportDelayMs?: number;
}

export class TracingSetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TracingSetupError';
  }
}

/** One export to the receiver may take this long. */
const EXPORT_TIMEOUT_MS = 5_000;
/** How long shutdown() waits for the last spans to leave. */
const SHUTDOWN_MS = 2_000;

export const TRACING_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/sdk-trace',
  '@opentelemetry/resources',
  '@opentelemetry/exporter-trace-otlp-http',
] as const;

/**
 * The endpoint to export to: the explicit setting, else OTEL_EXPORTER_OTLP_ENDPOINT; undefined (tracing off) when
 * neither is set.
 */
export function otlpEndpointFrom(
  setting: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const v = (setting ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim();
  if (v === '') return undefined;
  if (!/^https?:\/\/[^\s/]+(\/\S*)?$/.test(v))
    throw new TracingSetupError(
      `the OTLP endpoint "${v.slice(0, 100)}" must be an http:// or https:// URL (e.g. http://127.0.0.1:4318)`,
    );
  return v.replace(/\/+$/, '');
}

type Otel = {
  api: typeof import('@opentelemetry/api');
  sdk: typeof import('@opentelemetry/sdk-trace');
  resources: typeof import('@opentelemetry/resources');
  otlp: typeof import('@opentelemetry/exporter-trace-otlp-http') | null;
};

async function loadOtel(needOtlp: boolean): Promise<Otel> {
  try {
    const [api, sdk, resources, otlp] = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/resources'),
      needOtlp ? import('@opentelemetry/exporter-trace-otlp-http') : Promise.resolve(null),
    ]);
    return { api, sdk, resources, otlp };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND')
      throw new TracingSetupError(
        `tracing (an OTLP endpoint is configured) needs OpenTelemetry's packages, which are not installed: run \`npm install ${TRACING_PACKAGES.join(' ')}\``,
      );
    throw err;
  }
}

/** Tracing that exports to `otlpEndpoint` (or `exporter`); NO_TRACING when neither is given. */
export async function openTracing(o: TracingOptions): Promise<Tracing> {
  if (o.otlpEndpoint === undefined && o.exporter === undefined) return NO_TRACING;
  const otel = await loadOtel(o.exporter === undefined);
  const { api, sdk, resources } = otel;
  const exporter =
    (o.exporter as import('@opentelemetry/sdk-trace').SpanExporter | undefined) ??
    new (otel.otlp as NonNullable<Otel['otlp']>).OTLPTraceExporter({ url: `${o.otlpEndpoint}/v1/traces` });
  const envDelayMs = Number(process.env.OTEL_BSP_SCHEDULE_DELAY);
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': o.serviceName,
      ...(o.instanceId !== undefined ? { 'service.instance.id': o.instanceId } : {}),
    }),
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter,
        scheduledDelayMillis: o.exportDelayMs ?? (envDelayMs > 0 ? envDelayMs : 1_000),
        exportTimeoutMillis: EXPORT_TIMEOUT_MS,
      }),
    ],
  });
  const tracer = provider.getTracer('verdict');
  const KIND = { server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT, internal: api.SpanKind.INTERNAL } as const;

  const parentContext = (parent: TraceContext | undefined): import('@opentelemetry/api').Context => {
    const p = parent === undefined ? null : parseTraceparent(parent.traceparent);
    if (p === null) return api.ROOT_CONTEXT;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId: p.traceId,
      spanId: p.spanId,
      traceFlags: p.flags,
      isRemote: true,
      ...(parent?.tracestate !== undefined ? { traceState: api.createTraceState(parent.tracestate) } : {}),
    });
  };

  return {
    on: true,
    start(name, kind, parent, attributes) {
      const span = tracer.startSpan(
        name,
        { kind: KIND[kind], ...(attributes !== undefined ? { attributes } : {}) },
        parentContext(parent),
      );
      const sc = span.spanContext();
      const ctx = traceContext(
        formatTraceparent({ traceId: sc.traceId, spanId: sc.spanId, flags: sc.traceFlags }),
        sc.traceState?.serialize(),
      ) ?? {
        traceparent: formatTraceparent({ traceId: sc.traceId, spanId: sc.spanId, flags: sc.traceFlags }),
      };
      let ended = false;
      return {
        context: ctx,
        traceId: sc.traceId,
        set: (key, value) => {
          span.setAttribute(key, value);
        },
        end: (error) => {
          if (ended) return;
          ended = true;
          if (error !== undefined) span.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
          span.end();
        },
      };
    },
    // A receiver that is down must not hold a stopping process: the last spans get SHUTDOWN_MS.
    shutdown: () => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((r) => {
        timer = setTimeout(r, SHUTDOWN_MS);
        timer.unref();
      });
      return Promise.race([provider.shutdown().catch(() => {}), late]).finally(() => clearTimeout(timer));
    },
  };
}
