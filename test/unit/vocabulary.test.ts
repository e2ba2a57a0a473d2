// One vocabulary (docs/architecture.md, "One vocabulary"): a transaction's
// outcome has one type, the domain's (src/domain/protocol.ts), and every
// public entry point of the package exports that very type; the wire's enums
// are read and written in one file at the transport edge; a translation
// from one spelling of COMMIT/ABORT to another lives only in the files that
// own an edge. The source is parsed with the TypeScript compiler, so a word
// inside a comment or a longer message is not a use.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { parseSagaServiceArgs } from '../../src/cli/saga-service.ts';
import { ID } from '../../src/domain/id.ts';
import { sagaIdProblem } from '../../src/domain/saga-id.ts';
import { sagaDefProblem } from '../../src/saga/commands.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = join(ROOT, 'src');
const rel = (f: string): string => relative(ROOT, f).split(sep).join('/');

/** The one file where the wire's enum names are read and written. */
const WIRE_EDGE = 'src/transport/protocol-wire.ts';

/**
 * The files where one spelling of COMMIT/ABORT is translated to another, and why:
 * each is an edge of its own (the wire, the records on disk, an output format).
 */
const TRANSLATION_EDGES: Record<string, string> = {
  'src/domain/protocol.ts': 'decision (the log) ↔ outcome ↔ transaction status, the domain itself',
  [WIRE_EDGE]: 'wire enums ↔ domain',
  'src/participant/types.ts': "the participant journal's and heuristic tables' on-disk spelling ↔ domain",
  'src/node/coordinator-service.ts': "the metrics' label values (docs/operations.md) ↔ domain",
};

/** The spellings of COMMIT/ABORT, each a pair; a translation turns one spelling into another. */
const SPELLINGS: readonly (readonly [string, string])[] = [
  ['commit', 'abort'],
  ['committed', 'aborted'],
  ['COMMITTED', 'ABORTED'],
  ['OUTCOME_COMMITTED', 'OUTCOME_ABORTED'],
  ['DECISION_COMMIT', 'DECISION_ABORT'],
  ['TXN_STATUS_COMMITTED', 'TXN_STATUS_ABORTED'],
];
/** Which spelling `s` is, or -1 when it is none. */
const spellingOf = (s: string): number => SPELLINGS.findIndex((p) => p.includes(s));
const spelling = (s: string): boolean => spellingOf(s) >= 0;
const WIRE_ENUM = /^(OUTCOME|DECISION|VOTE|TXN_STATUS)_[A-Z_]+$/;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'gen') out.push(...sourceFiles(p));
    } else if (/\.ts$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const literal = (n: ts.Node | undefined): string | null =>
  n !== undefined && (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) ? n.text : null;

/** The string literals a comparison in `cond` names (x === 'a', 'a' === x, a || of them). */
function compared(cond: ts.Expression): string[] {
  if (ts.isParenthesizedExpression(cond)) return compared(cond.expression);
  if (!ts.isBinaryExpression(cond)) return [];
  const k = cond.operatorToken.kind;
  if (k === ts.SyntaxKind.BarBarToken || k === ts.SyntaxKind.AmpersandAmpersandToken)
    return [...compared(cond.left), ...compared(cond.right)];
  if (k !== ts.SyntaxKind.EqualsEqualsEqualsToken && k !== ts.SyntaxKind.ExclamationEqualsEqualsToken) return [];
  return [literal(cond.left), literal(cond.right)].filter((s): s is string => s !== null);
}

interface VocabularyProblem {
  file: string;
  line: number;
  what: string;
}

/**
 * The wire enum names used outside WIRE_EDGE, and translations between spellings outside TRANSLATION_EDGES, in one
 * file.
 */
function vocabularyProblems(file: string, text: string): VocabularyProblem[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: VocabularyProblem[] = [];
  const at = (n: ts.Node, what: string): void =>
    void out.push({ file, line: sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1, what });
  const translates = !(file in TRANSLATION_EDGES);
  const visit = (n: ts.Node): void => {
    const s = literal(n);
    if (s !== null && WIRE_ENUM.test(s) && file !== WIRE_EDGE) at(n, `the wire's enum '${s}' outside ${WIRE_EDGE}`);
    if (translates && ts.isConditionalExpression(n)) {
      const a = literal(n.whenTrue);
      const b = literal(n.whenFalse);
      const from = compared(n.condition).filter(spelling);
      const to = [a, b].filter((x): x is string => x !== null && spelling(x));
      if (from.length > 0 && to.some((t) => !from.some((f) => spellingOf(f) === spellingOf(t))))
        at(n, `a translation from ${from.map((f) => `'${f}'`).join('/')} to ${to.map((t) => `'${t}'`).join('/')}`);
    }
    if (translates && ts.isPropertyAssignment(n)) {
      const key = ts.isIdentifier(n.name) || ts.isStringLiteral(n.name) ? n.name.text : null;
      const value = literal(n.initializer);
      if (key !== null && value !== null && spelling(key) && spelling(value) && spellingOf(key) !== spellingOf(value))
        at(n, `a translation table from '${key}' to '${value}'`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** The package's public entry points (package.json "exports"), as their source files. */
function entryPoints(): Map<string, string> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, { types?: string } | string>;
  };
  const out = new Map<string, string>();
  for (const [key, v] of Object.entries(pkg.exports)) {
    const types = typeof v === 'string' ? undefined : v.types;
    if (types === undefined) continue;
    const src = types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts');
    out.set(key === '.' ? pkg.name : `${pkg.name}/${key.replace(/^\.\//, '')}`, join(ROOT, src));
  }
  return out;
}

/**
 * For each entry point: where each outcome type it exports is declared (file and name), or undefined when it exports
 * none.
 */
function outcomeExports(entries: Map<string, string>, names: readonly string[]): Map<string, Map<string, string>> {
  const program = ts.createProgram([...entries.values()], {
    allowImportingTsExtensions: true,
    noEmit: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const out = new Map<string, Map<string, string>>();
  for (const [entry, file] of entries) {
    const sf = program.getSourceFile(file);
    const mod = sf === undefined ? undefined : checker.getSymbolAtLocation(sf);
    const found = new Map<string, string>();
    for (const sym of mod === undefined ? [] : checker.getExportsOfModule(mod)) {
      if (!names.includes(sym.name)) continue;
      const target = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
      const decl = target.declarations?.[0];
      found.set(sym.name, decl === undefined ? '?' : `${rel(decl.getSourceFile().fileName)}#${target.name}`);
    }
    out.set(entry, found);
  }
  return out;
}

describe('one vocabulary', () => {
  it('every public entry point that exports an outcome type exports the domain’s own: Outcome, ClusterOutcome, and no other spelling', () => {
    const entries = entryPoints();
    expect(entries.get('verdict/client')).toBeDefined();
    expect(entries.get('verdict/participant')).toBeDefined();
    const names = ['Outcome', 'ClusterOutcome', 'FinalOutcome'];
    const found = outcomeExports(entries, names);
    for (const sdk of ['verdict/client', 'verdict/participant']) {
      expect(found.get(sdk)?.get('Outcome'), `${sdk} exports Outcome`).toBe('src/domain/protocol.ts#Outcome');
      expect(found.get(sdk)?.get('ClusterOutcome'), `${sdk} exports ClusterOutcome`).toBe(
        'src/domain/protocol.ts#ClusterOutcome',
      );
    }
    for (const [entry, types] of found) {
      for (const [name, where] of types)
        expect(where, `${entry} exports ${name}`).toBe(`src/domain/protocol.ts#${name}`);
    }
  }, 180_000);

  it("the wire's enums are named only in src/transport/protocol-wire.ts; COMMIT/ABORT change spelling only at an edge", () => {
    const problems = sourceFiles(SRC).flatMap((f) => vocabularyProblems(rel(f), readFileSync(f, 'utf8')));
    expect(problems.map((p) => `${p.file}:${p.line}: ${p.what}`)).toEqual([]);
  });

  it('the scan finds each kind of problem it is there for (the rule can fail)', () => {
    const mutants = [
      // The wire's outcome translated again in the client: a wire enum outside the edge, and a translation.
      ["const o = (w: string) => (w === 'OUTCOME_COMMITTED' ? 'COMMITTED' : 'ABORTED');", 'src/client/mutant.ts', 2],
      // An outcome spelled the old participant way from a decision.
      ["const o = (d: string) => (d === 'commit' ? 'committed' : 'aborted');", 'src/participant/mutant.ts', 1],
      // A table from one spelling to another (two entries).
      ["const T = { commit: 'COMMITTED', abort: 'ABORTED' };", 'src/cli/mutant.ts', 2],
      // A wire enum read outside the edge, even without translating it.
      ["const yes = (v: { vote: string }) => v.vote === 'VOTE_YES';", 'src/participant/mutant.ts', 1],
    ] as const;
    for (const [code, file, n] of mutants) expect(vocabularyProblems(file, code), code).toHaveLength(n);
    // The same code at its edge is no problem; words in a comment or a message are not uses.
    expect(vocabularyProblems(WIRE_EDGE, mutants[0][0])).toEqual([]);
    expect(vocabularyProblems('src/domain/protocol.ts', mutants[1][0])).toEqual([]);
    expect(
      vocabularyProblems(
        'src/client/x.ts',
        "// 'OUTCOME_COMMITTED'\nconst m = 'needs OUTCOME_COMMITTED or OUTCOME_ABORTED';",
      ),
    ).toEqual([]);
    // Comparing one spelling with itself is no translation.
    expect(
      vocabularyProblems('src/client/x.ts', "const f = (o: string) => (o === 'COMMITTED' ? 'COMMITTED' : 'ABORTED');"),
    ).toEqual([]);
  });
});

describe('one id rule', () => {
  it('`verdict saga service --id` takes exactly the participant ids (a step service registers as one)', () => {
    const args = (id: string) => [
      '--id',
      id,
      '--listen',
      '127.0.0.1:7201',
      '--data',
      '/tmp/x',
      '--handler',
      'reserve',
      '--insecure',
    ];
    for (const good of ['pay', 'pay.svc-2', 'A_1', 'x'.repeat(64)])
      expect(parseSagaServiceArgs(args(good), {}).id).toBe(good);
    for (const bad of ['-pay', '.pay', '_pay', 'x'.repeat(65), 'pay:1', '']) {
      expect(ID.test(bad), bad).toBe(false);
      expect(() => parseSagaServiceArgs(args(bad), {}), bad).toThrow(/--id/);
    }
  });
});

describe('one saga id rule', () => {
  it('the saga table and every other edge (the console) take the same saga ids: src/domain/saga-id.ts', () => {
    const step = { service: 'pay', name: 'charge', input: '' };
    for (const id of ['order-7', 'order+7', 'ORD/7', '', 'x'.repeat(128), 'x'.repeat(129), 'a b', '.x']) {
      const table = sagaDefProblem(id, [step], null);
      expect(table === null, id).toBe(sagaIdProblem(id) === null);
      if (table !== null) expect(table).toBe(sagaIdProblem(id));
    }
    expect(sagaIdProblem('order+7')).toBeNull();
    const consoleApi = readFileSync(join(SRC, 'console/product-api.ts'), 'utf8');
    expect(consoleApi).toContain('sagaIdProblem(');
    expect(consoleApi).not.toContain('TXN_ID_PATTERN');
  });
});
