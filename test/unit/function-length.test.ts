// The pure layers stay readable: no function in them runs over 70 lines, so
// each state change can be read, and its assertions checked, on one screen.
// A long transition is split into named handlers (the decision table's
// apply is one method per command kind). Parsed with the TypeScript
// compiler: every function, method, arrow and accessor with a body counts,
// nested ones on their own.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The folders that take time, randomness and I/O as arguments (docs/architecture.md). */
const PURE = ['src/domain', 'src/raft', 'src/commit', 'src/lease', 'src/saga'];
const LINES_MAX = 70;

/** Every function over `max` lines in `text`, as `file:line name (n lines)`. */
function longFunctions(file: string, text: string, max: number): string[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isFunctionLike(n) && 'body' in n && n.body !== undefined) {
      const first = src.getLineAndCharacterOfPosition(n.getStart(src)).line;
      const last = src.getLineAndCharacterOfPosition(n.end).line;
      const name = n.name !== undefined && ts.isIdentifier(n.name) ? n.name.text : '(anonymous)';
      if (last - first + 1 > max) out.push(`${file}:${first + 1} ${name} (${last - first + 1} lines)`);
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

const tsFiles = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? tsFiles(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
  );

describe('function length in the pure layers', () => {
  it(`no function in ${PURE.join(', ')} is over ${LINES_MAX} lines`, () => {
    const long = PURE.flatMap(tsFiles).flatMap((f) =>
      longFunctions(relative(ROOT, join(ROOT, f)), readFileSync(join(ROOT, f), 'utf8'), LINES_MAX),
    );
    expect(long).toEqual([]);
  });

  it('the check sees functions, methods and arrows, nested ones on their own', () => {
    const body = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = `function big() {\n${body(70)}\n}\nclass C {\n  m() {\n${body(10)}\n  }\n}\nconst f = () => {\n${body(68)}\n};\nfunction outer() {\n  const inner = () => {\n${body(80)}\n  };\n}\n`;
    expect(longFunctions('x.ts', text, LINES_MAX)).toEqual([
      'x.ts:1 big (72 lines)',
      'x.ts:157 outer (84 lines)',
      'x.ts:158 (anonymous) (82 lines)',
    ]);
  });
});
