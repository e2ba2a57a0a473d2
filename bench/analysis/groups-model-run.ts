// `npm run bench -- groups-model [FILE] [--write] [--json]`: the capacity model (./groups-model.ts) fitted again to
// the `groups` points of a results file (bench/results/latest.json unless named; the JSON `npm run bench -- groups`
// prints, npm's banner before it included) and its validation printed: each nodes × G point left out in turn, the
// smallest cluster predicting the larger, the error ranges, the 9 × 16 prediction. `--json` prints the model as
// JSON instead; `--write` also stores it as the file's `groups.model`, so `npm run bench -- report FILE` shows it.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { modelLines } from '../report/groups-section.ts';
import type { GroupsFigures } from '../scenarios/groups.ts';
import { modelOf } from './groups-model.ts';

/** A table whose columns line up in a terminal and which is still Markdown. */
export function alignedTable(head: string[], rows: (string | number)[][]): string {
  const all = [head, head.map(() => '---'), ...rows].map((r) => r.map(String));
  const widths = head.map((_, j) => Math.max(...all.map((r) => (r[j] ?? '').length)));
  return all.map((r) => `| ${r.map((c, j) => c.padEnd(widths[j]!)).join(' | ')} |`).join('\n');
}

/** The results object in `text`: a results file, or the JSON a tool printed after npm's banner lines. */
export function parseResults(text: string, file: string): { groups?: GroupsFigures | null } {
  const start = text.search(/^\{/m);
  if (start < 0) throw new Error(`${file}: no JSON object in it`);
  return JSON.parse(text.slice(start)) as { groups?: GroupsFigures | null };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a.startsWith('-') && a !== '--write' && a !== '--json');
  if (unknown.length > 0)
    throw new Error(`groups-model: unknown option ${unknown[0]} (takes [FILE] [--write] [--json])`);
  const file = args.find((a) => !a.startsWith('-')) ?? join(import.meta.dirname, '..', 'results', 'latest.json');
  const text = readFileSync(file, 'utf8');
  const results = parseResults(text, file);
  const g = results.groups;
  if (g === undefined || g === null || g.points.length === 0) throw new Error(`${file}: no groups points in it`);
  const model = modelOf(g.points, g.settings.cores, g.fsync_ms);
  if (model === null)
    throw new Error(`${file}: the points cannot separate per-batch from per-transaction costs (one batch size)`);
  if (args.includes('--json')) process.stdout.write(`${JSON.stringify(model, null, 2)}\n`);
  else {
    const when = [...new Set(g.points.flatMap((p) => p.windows.map((w) => w.load_avg)))];
    process.stdout.write(
      `${file}: ${g.points.map((p) => `${p.nodes}x${p.groups}`).join(', ')}; clients ${g.settings.clients.join('/')}; ${g.settings.cores} cores; load average ${Math.min(...when)} to ${Math.max(...when)} in the windows\n`,
    );
    process.stdout.write(`${modelLines(model, alignedTable).join('\n')}\n`);
  }
  if (args.includes('--write')) {
    if (text.search(/^\{/m) !== 0) throw new Error(`${file}: --write takes a results file, not a tool's output`);
    const whole = JSON.parse(text) as Record<string, unknown>;
    whole.groups = { ...g, model };
    writeFileSync(`${file}.tmp`, `${JSON.stringify(whole, null, 2)}\n`);
    renameSync(`${file}.tmp`, file);
    process.stderr.write(`groups-model: stored the model as groups.model in ${file}\n`);
  }
}
