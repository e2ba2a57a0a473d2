// `npm run bench -- groups [--quick] [--nodes 3,5] [--groups 1,2,4] [--clients 16,64] [--together 4|none]`: the
// decision groups scenario alone (bench/scenarios/groups.ts) with the capacity model fitted to it (./groups-model.ts);
// progress on stderr, the figures as JSON on stdout (the results file's `groups` key). Everything it starts is stopped
// at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { killAllNow, stopAll } from '../harness/procs.ts';
import { groupsPlan, measureGroups } from '../scenarios/groups.ts';
import { withModel } from './groups-model.ts';

function listFlag(name: string, fallback: number[]): number[] {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const xs = (process.argv[i + 1] ?? '').split(',').map(Number);
  if (xs.length === 0 || xs.some((x) => !Number.isInteger(x) || x <= 0))
    throw new Error(`--${name} needs positive integers separated by commas, not ${process.argv[i + 1] ?? '(nothing)'}`);
  return xs;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const plan = groupsPlan(process.argv.includes('--quick'));
  const dir = mkdtempSync(join(tmpdir(), 'verdict-bench-groups-'));
  process.on('exit', killAllNow);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => void stopAll().then(() => process.exit(130)));
  let ok = false;
  try {
    const f = withModel(
      await measureGroups(dir, {
        ...plan,
        nodes: listFlag('nodes', plan.nodes),
        groups: listFlag('groups', plan.groups),
        clients: listFlag('clients', plan.clients),
        together:
          process.argv[process.argv.indexOf('--together') + 1] === 'none' ? [] : listFlag('together', plan.together),
        log: (line) => process.stderr.write(`${line}\n`),
      }),
    );
    process.stdout.write(`${JSON.stringify({ groups: f }, null, 2)}\n`);
    ok = true;
  } finally {
    await stopAll();
    if (ok) rmSync(dir, { recursive: true, force: true });
    else process.stderr.write(`groups: kept ${dir} (node, participant and load generator logs)\n`);
  }
}
