// The saga orchestrator's Prometheus metrics, on the node's registry
// (src/node/metrics.ts): sagas by state and stuck ones, read from the applied
// table at scrape time; this leader's step attempts, errors and stuck flags
// from the engine's counters; and each step call's latency, observed as it ends.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { SagaEngine } from '../saga/engine.ts';
import { SAGA_STATES, type SagaTable, type StepKind } from '../saga/state.ts';

export class SagaMetrics {
  private readonly stepSeconds: Histogram<'kind' | 'result'>;

  constructor(r: Registry, src: { engine: () => SagaEngine | null; table: () => SagaTable | null }) {
    new Gauge({
      name: 'verdict_sagas',
      help: 'Sagas in the applied table, by state (running, compensating, finished, compensated).',
      labelNames: ['state'],
      registers: [r],
      collect() {
        const t = src.table();
        if (!t) return;
        const n: Record<string, number> = Object.fromEntries(SAGA_STATES.map((s) => [s, 0]));
        for (const s of t.sagas.values()) n[s.state]++;
        for (const s of SAGA_STATES) this.set({ state: s }, n[s]);
      },
    });
    new Gauge({
      name: 'verdict_sagas_stuck',
      help: 'Sagas flagged stuck now: a call retried past stuckAfterAttempts (verdict saga list --stuck).',
      registers: [r],
      collect() {
        const t = src.table();
        if (t) this.set([...t.sagas.values()].filter((s) => s.stuck !== null).length);
      },
    });
    const fromCounters = (name: string, help: string, f: (c: ReturnType<SagaEngine['counters']>) => number): void => {
      new Counter({
        name,
        help,
        registers: [r],
        collect() {
          const e = src.engine();
          if (!e) return;
          this.reset();
          this.inc(f(e.counters()));
        },
      });
    };
    fromCounters('verdict_saga_stuck_total', 'Sagas this node flagged stuck while it led.', (c) => c.stuck);
    fromCounters('verdict_saga_step_attempts_total', 'Step calls (actions and compensations) this node made while it led, retries included.', (c) => c.stepAttempts);
    fromCounters('verdict_saga_step_errors_total', 'Step calls that failed transiently (an error, no answer, garbage) and were retried.', (c) => c.stepErrors);
    fromCounters('verdict_sagas_started_total', 'Sagas this node started while it led.', (c) => c.started);
    this.stepSeconds = new Histogram({
      name: 'verdict_saga_step_duration_seconds',
      help: 'Time from a step call to its answer or error, by kind (action, compensate) and result (answered, error).',
      labelNames: ['kind', 'result'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [r],
    });
  }

  observeStep(seconds: number, kind: StepKind, answered: boolean): void {
    this.stepSeconds.observe({ kind, result: answered ? 'answered' : 'error' }, seconds);
  }
}
