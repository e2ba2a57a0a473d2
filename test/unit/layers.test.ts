// The layers of src/ (docs/architecture.md draws them): every import points
// down, never up and never sideways to a sibling, so no two folders import
// each other; no file imports itself back through others; and the node core,
// the one composition the simulator also runs, imports only the kernel.
//
// Every import counts: static `import` and `export … from`, type-only ones
// (a type import still ties the two modules' designs together), dynamic
// `import('…')` and `typeof import('…')`. The source is parsed with the
// TypeScript compiler, so an import inside a string or a comment is not one.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = join(ROOT, 'src');

/**
 * The layers, lowest first. A folder imports only folders of lower layers;
 * folders of one layer are siblings and do not import each other. The same
 * order, drawn top down, is in docs/architecture.md (checked below).
 */
const LAYERS: readonly { name: string; folders: readonly string[] }[] = [
  { name: 'foundation', folders: ['domain', 'util'] },
  { name: 'raft', folders: ['raft'] },
  { name: 'storage', folders: ['storage'] },
  { name: 'transport', folders: ['transport'] },
  { name: 'commit', folders: ['commit'] },
  { name: 'history', folders: ['history'] },
  { name: 'SDKs', folders: ['client', 'participant'] },
  { name: 'products', folders: ['saga', 'lease', 'outbox', 'console'] },
  { name: 'node', folders: ['node'] },
  { name: 'apps', folders: ['cli'] },
];
/** The kernel: these folders and the node core import nothing above them. */
const KERNEL = new Set(['domain', 'util', 'raft', 'storage', 'transport', 'commit']);
/** The node core: this file and every file of src/node/ it imports, transitively (the composition without I/O). */
const NODE_CORE_ROOT = 'node/core.ts';

const rank = new Map<string, number>();
const layerOf = new Map<string, string>();
for (const [i, l] of LAYERS.entries()) {
  for (const f of l.folders) {
    rank.set(f, i);
    layerOf.set(f, l.name);
  }
}

/** Every module specifier `text` imports. */
function importsOf(fileName: string, text: string): string[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if (
      (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) &&
      n.moduleSpecifier &&
      ts.isStringLiteral(n.moduleSpecifier)
    )
      out.push(n.moduleSpecifier.text);
    else if (
      ts.isImportEqualsDeclaration(n) &&
      ts.isExternalModuleReference(n.moduleReference) &&
      ts.isStringLiteral(n.moduleReference.expression)
    )
      out.push(n.moduleReference.expression.text);
    else if (
      ts.isCallExpression(n) &&
      n.expression.kind === ts.SyntaxKind.ImportKeyword &&
      n.arguments[0] &&
      ts.isStringLiteralLike(n.arguments[0])
    )
      out.push(n.arguments[0].text);
    else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal))
      out.push(n.argument.literal.text);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|mts|cts)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The file a relative specifier names, or null when none exists. */
function resolveImport(from: string, spec: string): string | null {
  const base = resolve(dirname(from), spec);
  for (const c of [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')])
    if (existsSync(c) && !c.endsWith(sep) && c.includes('.')) return c;
  return null;
}

const rel = (abs: string): string => relative(SRC, abs).split(sep).join('/');
const folderOf = (r: string): string => r.split('/')[0] ?? '';

interface Graph {
  /** src-relative file → src-relative files it imports. */
  edges: Map<string, Set<string>>;
  unresolved: string[];
}

function readGraph(): Graph {
  const edges = new Map<string, Set<string>>();
  const unresolved: string[] = [];
  for (const abs of sourceFiles(SRC)) {
    const to = new Set<string>();
    for (const spec of importsOf(abs, readFileSync(abs, 'utf8'))) {
      if (!spec.startsWith('.')) continue; // a package or a node: builtin
      const target = resolveImport(abs, spec);
      if (target === null) unresolved.push(`${rel(abs)} imports ${spec}, which is no file`);
      else if (target.startsWith(SRC + sep)) to.add(rel(target));
      else unresolved.push(`${rel(abs)} imports ${relative(ROOT, target)}, outside src/`);
    }
    edges.set(rel(abs), to);
  }
  return { edges, unresolved };
}

/** Why the import `from` → `to` breaks the layers, or null. */
function layerProblem(from: string, to: string): string | null {
  const a = folderOf(from);
  const b = folderOf(to);
  if (a === b) return null;
  const ra = rank.get(a);
  const rb = rank.get(b);
  if (ra === undefined || rb === undefined) return null; // an unplaced folder fails its own check
  if (rb < ra) return null;
  const how =
    rb === ra
      ? `${b} is its sibling in layer ${layerOf.get(a)}`
      : `${b} (${layerOf.get(b)}) is above ${a} (${layerOf.get(a)})`;
  return `src/${from} imports src/${to}: ${how}`;
}

/** The import cycles among files: each strongly connected set of more than one file, or a file importing itself. */
function fileCycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!edges.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop();
      if (w === undefined) break;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || edges.get(v)?.has(v)) out.push(scc.sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) connect(v);
  return out;
}

describe('the import reader', () => {
  it('sees static, type-only, re-exported, dynamic and typeof imports, and not imports in strings or comments', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from '../b/b.ts';",
      "import './side-effect.ts';",
      "export { c } from './c.ts';",
      "export type * from './d.ts';",
      "const e = await import('./e.ts');",
      "type F = typeof import('./f.ts');",
      "// import { g } from './g.ts';",
      'const h = "import { h } from \'./h.ts\'";',
    ].join('\n');
    expect(importsOf('x.ts', text)).toEqual([
      './a.ts',
      '../b/b.ts',
      './side-effect.ts',
      './c.ts',
      './d.ts',
      './e.ts',
      './f.ts',
    ]);
  });
});

describe('layers of src/', () => {
  const { edges, unresolved } = readGraph();

  it('reads every file of src/ and resolves every relative import', () => {
    expect(edges.size).toBeGreaterThan(100);
    expect(unresolved).toEqual([]);
  });

  it('places every folder of src/ in a layer', () => {
    const folders = readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.filter((f) => !rank.has(f))).toEqual([]);
    expect([...rank.keys()].filter((f) => !folders.includes(f))).toEqual([]);
  });

  it('every import points down a layer: none up, none to a sibling, so no two folders import each other', () => {
    const problems: string[] = [];
    for (const [from, tos] of edges) for (const to of tos) problems.push(layerProblem(from, to) ?? '');
    expect(problems.filter((p) => p !== '')).toEqual([]);
  });

  it('the kernel imports no product, SDK or app, and neither does the node core', () => {
    const core = new Set<string>();
    const visit = (f: string): void => {
      if (core.has(f)) return;
      core.add(f);
      for (const t of edges.get(f) ?? []) if (folderOf(t) === 'node') visit(t);
    };
    visit(NODE_CORE_ROOT);
    expect(core.has('node/machine.ts') && core.has('node/driver.ts')).toBe(true);
    const problems: string[] = [];
    for (const [from, tos] of edges) {
      if (!KERNEL.has(folderOf(from)) && !core.has(from)) continue;
      for (const to of tos)
        if (!KERNEL.has(folderOf(to)) && !core.has(to))
          problems.push(
            `src/${from} imports src/${to}, above the kernel${core.has(from) ? ' (it is part of the node core)' : ''}`,
          );
    }
    expect(problems).toEqual([]);
  });

  it('no file imports itself back through other files', () => {
    expect(fileCycles(edges).map((c) => c.map((f) => `src/${f}`).join(' <-> '))).toEqual([]);
  });

  it('the cycle finder finds a cycle, and the layer rule an import up and one sideways', () => {
    expect(
      fileCycles(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set(['c'])],
          ['c', new Set(['a'])],
          ['d', new Set(['a'])],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
    expect(layerProblem('commit/state.ts', 'saga/state.ts')).toMatch(/saga \(products\) is above commit \(commit\)/);
    expect(layerProblem('saga/state.ts', 'lease/state.ts')).toMatch(/lease is its sibling in layer products/);
    expect(layerProblem('saga/state.ts', 'commit/state.ts')).toBeNull();
  });

  it('docs/architecture.md draws the same layers, top down', () => {
    const text = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const section = text.slice(text.indexOf('## Layers'));
    const drawing = section.slice(section.indexOf('```'), section.indexOf('```', section.indexOf('```') + 3));
    const drawn: string[] = [];
    for (const m of drawing.matchAll(/src\/([a-z]+)\//g)) if (!drawn.includes(m[1] ?? '')) drawn.push(m[1] ?? '');
    const expected = [...LAYERS].reverse().flatMap((l) => l.folders);
    expect(drawn).toEqual(expected);
  });
});
