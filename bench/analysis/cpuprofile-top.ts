// `npm run bench -- cpuprofile-top DIR [--top N (15)]`
//
// Summarises the CPU profiles a run with VERDICT_BENCH_CPU_PROF=DIR wrote
// (bench/harness/procs.ts): for each process folder, the main thread's profile (the
// largest .cpuprofile in it; tsx's loader thread writes a small second one),
// the share of sampled time that was garbage collection, the share by where
// the code lives (Verdict's src/, grpc-js, pg, Node's own, ...), and the
// functions with the most self time. Idle time is left out of every share:
// the shares are of the CPU the process used. For finding what is in the
// way; the CPU per transaction itself comes from bench/analysis/cpu-per-txn.ts.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { intFlag } from '../harness/procs.ts';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled time not idle, in ms. */
  busyMs: number;
  gcShare: number;
  byArea: [string, number][];
  top: { fn: string; share: number }[];
}

/** Where a frame's code lives, coarsely. */
function areaOf(f: CallFrame): string {
  const u = f.url;
  if (f.functionName === '(garbage collector)') return 'gc';
  if (f.functionName === '(program)') return 'program (V8, native)';
  if (u === '') return 'native';
  if (u.includes('/node_modules/@grpc/')) return 'grpc-js';
  if (u.includes('/node_modules/pg') || u.includes('/node_modules/pg-')) return 'pg (driver)';
  if (u.includes('/node_modules/protobufjs/') || u.includes('/node_modules/@protobufjs/')) return 'protobufjs';
  if (u.includes('/node_modules/classic-level/') || u.includes('/node_modules/abstract-level/')) return 'classic-level';
  if (u.includes('/node_modules/pino')) return 'pino';
  if (u.includes('/node_modules/')) return 'other packages';
  if (u.startsWith('node:')) return 'node';
  const src = /\/src\/([a-z-]+)\//.exec(u);
  if (src !== null) return `src/${src[1]}`;
  if (u.includes('/bench/')) return 'bench';
  return 'other';
}

function shortUrl(u: string): string {
  const i = u.search(/\/(src|bench|node_modules)\//);
  return i >= 0 ? u.slice(i + 1) : u;
}

export function summarise(p: CpuProfile, topN: number): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  for (const n of p.nodes) byId.set(n.id, n);
  const selfUs = new Map<number, number>();
  // Sample i's time is the delta to the next sample.
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i + 1] ?? 0;
    selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) ?? 0) + Math.max(0, dt));
  }
  let busyUs = 0;
  let gcUs = 0;
  const byFn = new Map<string, number>();
  const byArea = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const f = byId.get(id)?.callFrame;
    if (f === undefined || f.functionName === '(idle)') continue;
    busyUs += us;
    if (f.functionName === '(garbage collector)') gcUs += us;
    const key = `${f.functionName || '(anonymous)'} ${shortUrl(f.url)}${f.url !== '' ? `:${f.lineNumber + 1}` : ''}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
    const a = areaOf(f);
    byArea.set(a, (byArea.get(a) ?? 0) + us);
  }
  const share = (us: number): number => (busyUs === 0 ? 0 : us / busyUs);
  return {
    busyMs: busyUs / 1000,
    gcShare: share(gcUs),
    byArea: [...byArea].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, share(v)]),
    top: [...byFn]
      .sort((a, b) => b[1] - a[1])
      .slice(0, topN)
      .map(([fn, us]) => ({ fn, share: share(us) })),
  };
}

/** The main thread's profile of one process folder: the largest .cpuprofile in it. */
function mainProfile(dir: string): string | null {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f));
  files.sort((a, b) => statSync(b).size - statSync(a).size);
  return files[0] ?? null;
}

function main(): void {
  const root = process.argv[2];
  if (root === undefined || root.startsWith('--'))
    throw new Error('usage: npm run bench -- cpuprofile-top DIR [--top N]');
  const topN = intFlag('top', 15);
  const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
  for (const d of readdirSync(root).sort()) {
    const dir = join(root, d);
    if (!statSync(dir).isDirectory()) continue;
    const file = mainProfile(dir);
    if (file === null) {
      process.stdout.write(`${d}: no profile (the process did not exit cleanly)\n\n`);
      continue;
    }
    const s = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, topN);
    process.stdout.write(`${d}: ${s.busyMs.toFixed(0)} ms busy, GC ${pct(s.gcShare)}\n`);
    process.stdout.write(`  by area: ${s.byArea.map(([a, x]) => `${a} ${pct(x)}`).join(', ')}\n`);
    for (const t of s.top) process.stdout.write(`  ${pct(t.share).padStart(7)}  ${t.fn}\n`);
    process.stdout.write('\n');
  }
}

main();
