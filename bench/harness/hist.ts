// Latency histograms for the benchmark: HDR histograms (hdr-histogram-js) of
// microseconds, summarised as the percentiles the results file reports, and
// encoded (compressed base64) so a load generator can hand its raw histogram
// to the orchestrator on stdout.
import * as hdr from 'hdr-histogram-js';

export type Histogram = hdr.Histogram;

/** One hour in microseconds: anything slower is clamped (and would be a bug worth seeing). */
const HIGHEST_US = 3_600_000_000;

export function newHistogram(): Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_US,
    numberOfSignificantValueDigits: 3,
    autoResize: false,
  });
}

/** Records a duration given in milliseconds (performance.now() differences) as whole microseconds, at least 1. */
export function recordMs(h: Histogram, ms: number): void {
  h.recordValue(Math.min(HIGHEST_US, Math.max(1, Math.round(ms * 1000))));
}

export interface LatencySummary {
  count: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  p999_us: number;
  max_us: number;
  mean_us: number;
}

export function summarize(h: Histogram): LatencySummary {
  const empty = h.totalCount === 0;
  const at = (p: number): number => (empty ? 0 : h.getValueAtPercentile(p));
  return {
    count: h.totalCount,
    p50_us: at(50),
    p90_us: at(90),
    p99_us: at(99),
    p999_us: at(99.9),
    max_us: empty ? 0 : h.maxValue,
    mean_us: empty ? 0 : Math.round(h.mean),
  };
}

export function encode(h: Histogram): string {
  return hdr.encodeIntoCompressedBase64(h);
}

export function decode(b64: string): Histogram {
  return hdr.decodeFromCompressedBase64(b64);
}

/** Percentile of plain numbers (nearest rank); NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable with Date.now() in other processes. */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}
