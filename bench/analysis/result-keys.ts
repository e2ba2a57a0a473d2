// `npm run bench -- keys BEFORE.json AFTER.json`: the key paths of two
// results files side by side (`floors.fsync_200B.p50_us`, `scenarios[].tps`;
// an array's elements are read as one), printing the paths only one of them
// has; exit 1 when there are any. For checking that a change to the bench
// writes the same figures: run `npm run bench -- --quick` and compare its
// bench/results/latest.json with the one before. Runs of different plans
// differ by design where a key is named after a point of the plan (a full
// run's 1- and 5-node raw log, `raft.nodes1_*`), and a part that was skipped
// (PostgreSQL, MariaDB, etcd absent) writes its reason instead of its figures.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/**
 * Every path from the top of `value` to a leaf (a scalar, null, an empty object or array), arrays read as one element.
 */
export function keyPaths(value: unknown, at = ''): Set<string> {
  const out = new Set<string>();
  const walk = (v: unknown, p: string): void => {
    if (Array.isArray(v)) {
      if (v.length === 0) out.add(`${p}[]`);
      for (const x of v) walk(x, `${p}[]`);
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      if (keys.length === 0) out.add(`${p}{}`);
      for (const k of keys) walk((v as Record<string, unknown>)[k], p === '' ? k : `${p}.${k}`);
    } else out.add(p);
  };
  walk(value, at);
  return out;
}

/** The paths only `before` has and the paths only `after` has, each sorted. */
export function compareKeys(before: unknown, after: unknown): { onlyBefore: string[]; onlyAfter: string[] } {
  const a = keyPaths(before);
  const b = keyPaths(after);
  return { onlyBefore: [...a].filter((k) => !b.has(k)).sort(), onlyAfter: [...b].filter((k) => !a.has(k)).sort() };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [beforeFile, afterFile] = process.argv.slice(2);
  if (beforeFile === undefined || afterFile === undefined) {
    process.stderr.write('usage: npm run bench -- keys BEFORE.json AFTER.json\n');
    process.exit(64);
  }
  const read = (f: string): unknown => JSON.parse(readFileSync(f, 'utf8'));
  const before = read(beforeFile);
  const after = read(afterFile);
  const { onlyBefore, onlyAfter } = compareKeys(before, after);
  const lines = [`${beforeFile}: ${keyPaths(before).size} key paths; ${afterFile}: ${keyPaths(after).size}`];
  for (const k of onlyBefore) lines.push(`only in ${beforeFile}: ${k}`);
  for (const k of onlyAfter) lines.push(`only in ${afterFile}: ${k}`);
  lines.push(
    onlyBefore.length + onlyAfter.length === 0
      ? 'same keys'
      : `${onlyBefore.length + onlyAfter.length} key path(s) differ`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exitCode = onlyBefore.length + onlyAfter.length === 0 ? 0 : 1;
}
