// The saga orchestrator's Prometheus metrics, on the node's registry
// (src/node/metrics.ts): sagas by state and stuck ones by type, read from
// the applied table at scrape time; stuck flags by type as this leader
// applies them; this leader's step attempts and errors from the engine's
// counters; and each step call's latency, observed as it ends.
//
// A saga's type is a client's text, so as a label it is bounded: the first
// TYPE_LABELS_MAX types this node sees are their own label, any later one is
// "(other)", and a saga without a type is "(none)" (neither can be a type:
// a type has no parentheses).

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { SagaEngine } from '../saga/engine.ts';
import { SAGA_STATES, type SagaTable, type StepKind } from '../saga/state.ts';

/** Saga types with a label of their own on this node; later ones share "(other)". */
export const TYPE_LABELS_MAX = 64;
export const NO_TYPE_LABEL = '(none)';
export const OTHER_TYPE_LABEL = '(other)';

/** The metric label of a saga type, bounded in count (and in length by the type's own bound). */
export class TypeLabels {
  private readonly seen = new Set<string>();

  constructor(private readonly max = TYPE_LABELS_MAX) {}

  of(type: string | undefined): string {
    if (type === undefined || type === '') return NO_TYPE_LABEL;
    if (this.seen.has(type)) return type;
    if (this.seen.size >= this.max) return OTHER_TYPE_LABEL;
    this.seen.add(type);
    return type;
  }
}

export class SagaMetrics {
  private readonly stepSeconds: Histogram<'kind' | 'result'>;
  private readonly stuckFlags: Counter<'type'>;
  readonly types = new TypeLabels();

  constructor(
    r: Registry,
    src: {
      engine: () => SagaEngine | null;
      table: () => SagaTable | null;
      /** Every decision group's saga engine and table, summed over (absent: one group, `engine` and `table`). */
      groups?: () => readonly { engine: SagaEngine; table: SagaTable }[];
    },
  ) {
    const types = this.types;
    const tables = (): SagaTable[] => {
      const gs = src.groups?.();
      if (gs !== undefined && gs.length > 0) return gs.map((g) => g.table);
      const t = src.table();
      return t ? [t] : [];
    };
    const engines = (): SagaEngine[] => {
      const gs = src.groups?.();
      if (gs !== undefined && gs.length > 0) return gs.map((g) => g.engine);
      const e = src.engine();
      return e ? [e] : [];
    };
    new Gauge({
      name: 'verdict_sagas',
      help: 'Sagas in the applied table, by state (running, compensating, finished, compensated).',
      labelNames: ['state'],
      registers: [r],
      collect() {
        const ts = tables();
        if (ts.length === 0) return;
        const n: Record<string, number> = Object.fromEntries(SAGA_STATES.map((s) => [s, 0]));
        for (const t of ts) for (const s of t.sagas.values()) n[s.state]++;
        for (const s of SAGA_STATES) this.set({ state: s }, n[s]);
      },
    });
    new Gauge({
      name: 'verdict_sagas_stuck',
      help: 'Sagas flagged stuck now, by type ("(none)": no type; "(other)": past the types with a label of their own): a call retried past sagaStuckAfterAttempts (verdict saga list --stuck).',
      labelNames: ['type'],
      registers: [r],
      collect() {
        const ts = tables();
        if (ts.length === 0) return;
        const n = new Map<string, number>([[NO_TYPE_LABEL, 0]]);
        for (const t of ts)
          for (const s of t.sagas.values())
            if (s.stuck !== null) n.set(types.of(s.type), (n.get(types.of(s.type)) ?? 0) + 1);
        this.reset();
        for (const [type, count] of n) this.set({ type }, count);
      },
    });
    this.stuckFlags = new Counter({
      name: 'verdict_saga_stuck_total',
      help: 'Stuck flags this node applied while it led, by saga type (as verdict_sagas_stuck).',
      labelNames: ['type'],
      registers: [r],
    });
    this.stuckFlags.inc({ type: NO_TYPE_LABEL }, 0);
    const fromCounters = (name: string, help: string, f: (c: ReturnType<SagaEngine['counters']>) => number): void => {
      new Counter({
        name,
        help,
        registers: [r],
        collect() {
          const es = engines();
          if (es.length === 0) return;
          this.reset();
          this.inc(es.reduce((n, e) => n + f(e.counters()), 0));
        },
      });
    };
    fromCounters(
      'verdict_saga_step_attempts_total',
      'Step calls (actions and compensations) this node made while it led, retries included.',
      (c) => c.stepAttempts,
    );
    fromCounters(
      'verdict_saga_step_errors_total',
      'Step calls that failed transiently (an error, no answer, garbage) and were retried.',
      (c) => c.stepErrors,
    );
    fromCounters('verdict_sagas_started_total', 'Sagas this node started while it led.', (c) => c.started);
    this.stepSeconds = new Histogram({
      name: 'verdict_saga_step_duration_seconds',
      help: 'Time from a step call to its answer or error, by kind (action, compensate) and result (answered, error).',
      labelNames: ['kind', 'result'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [r],
    });
  }

  /** A saga of `type` was flagged stuck, applied while this node leads. */
  stuckFlagged(type: string | undefined): void {
    this.stuckFlags.inc({ type: this.types.of(type) });
  }

  observeStep(seconds: number, kind: StepKind, answered: boolean): void {
    this.stepSeconds.observe({ kind, result: answered ? 'answered' : 'error' }, seconds);
  }
}
