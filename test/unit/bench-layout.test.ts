// The benchmark's layout (docs/benchmarks.md, "Layout"): every file sits in
// the folder of its role, imports run only down the roles (harness, floors,
// scenarios, report, analysis, then the entry point), no file imports itself
// back through others, and every tool the one entry point names is there.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TOOLS } from '../../bench/cli.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BENCH = join(ROOT, 'bench');

/** The role folders, lowest first: a file may import its own folder and the folders before it. */
const ROLES = ['harness', 'floors', 'scenarios', 'report', 'analysis'];
/** The entry point and the run it starts: above every role. */
const TOP = ['run.mjs', 'cli.ts', 'main.ts'];

function sources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) sources(p, out);
    else if (/\.(ts|mts|mjs)$/.test(e.name)) out.push(relative(BENCH, p));
  }
  return out;
}

/**
 * Every relative import of a file (static, re-export, dynamic, and `import('…')` in type positions), as paths under
 * bench/.
 */
function importsOf(file: string): string[] {
  const text = readFileSync(join(BENCH, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)(['"])(\.{1,2}\/[^'"]+)\1/gm)) {
    const target = normalize(join(dirname(file), m[2]!));
    if (!target.startsWith('..')) out.push(target);
  }
  return out;
}

function rank(file: string): number {
  if (TOP.includes(file)) return ROLES.length;
  return ROLES.indexOf(file.split('/')[0]!);
}

/** The import cycles among files, each as the list of files around it. */
function cycles(edges: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    stack.push(f);
    for (const t of edges.get(f) ?? []) {
      if (state.get(t) === 'open') found.push([...stack.slice(stack.indexOf(t)), t]);
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of [...edges.keys()].sort()) if (!state.has(f)) visit(f);
  return found;
}

describe('bench layout', () => {
  const files = sources(BENCH);
  const edges = new Map(files.map((f) => [f, importsOf(f)]));

  it('every file is the entry point, the run, or in a role folder', () => {
    expect(files).toEqual(expect.arrayContaining(TOP));
    expect(files.filter((f) => rank(f) < 0)).toEqual([]);
  });

  it('imports name files that are there', () => {
    const missing = [...edges].flatMap(([f, ts]) =>
      ts.filter((t) => !existsSync(join(BENCH, t))).map((t) => `${f} -> ${t}`),
    );
    expect(missing).toEqual([]);
  });

  it('imports run down the roles: harness, floors, scenarios, report, analysis, entry point', () => {
    const up = [...edges].flatMap(([f, ts]) => ts.filter((t) => rank(t) > rank(f)).map((t) => `${f} -> ${t}`));
    expect(up).toEqual([]);
  });

  it('no import cycles between files', () => {
    expect(cycles(edges).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('the cycle finder finds a cycle through type-only imports', () => {
    const a = new Map([
      ['floors/a.ts', ['floors/b.ts']],
      ['floors/b.ts', ['harness/c.ts', 'floors/a.ts']],
      ['harness/c.ts', []],
    ]);
    expect(cycles(a)).toEqual([['floors/a.ts', 'floors/b.ts', 'floors/a.ts']]);
    expect(importsOf('floors/pg.ts')).toContain('floors/direct-child.ts');
  });

  it('every tool of `npm run bench -- <tool>` is a file under bench/, outside the harness', () => {
    expect(Object.keys(TOOLS).length).toBeGreaterThan(0);
    for (const [name, tool] of Object.entries(TOOLS)) {
      expect(existsSync(join(BENCH, tool.file)), `${name}: bench/${tool.file}`).toBe(true);
      expect(rank(tool.file), `${name}: bench/${tool.file}`).toBeGreaterThan(0);
    }
  });
});
