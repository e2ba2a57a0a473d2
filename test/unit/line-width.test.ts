// Lines are at most 120 columns. The formatter (biome.jsonc, lineWidth 120)
// breaks code; comments are wrapped by hand; what neither can break is a
// long string or template literal (an error message, a help text), which
// may run past 120 only where the literal itself is at least as long as the
// overflow — so breaking it is the only way the line would fit. Parsed with
// the TypeScript compiler, so a `//` inside a string is not a comment.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const FOLDERS = ['src', 'test', 'bench', 'scripts'];
const WIDTH = 120;
const LITERALS = new Set([
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateExpression,
  ts.SyntaxKind.RegularExpressionLiteral,
]);

/** Every line of `text` over `width` columns that breaking a literal would not bring in, as `file:line (n columns)`. */
function longLines(file: string, text: string, width: number): string[] {
  const lines = text.split('\n');
  if (lines.every((l) => l.length <= width)) return [];
  const kind = file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  /** Per line, the longest stretch of it inside one literal. */
  const inLiteral = new Array<number>(lines.length).fill(0);
  const visit = (n: ts.Node): void => {
    if (LITERALS.has(n.kind)) {
      const start = n.getStart(src);
      const a = src.getLineAndCharacterOfPosition(start);
      const b = src.getLineAndCharacterOfPosition(n.end);
      for (let line = a.line; line <= b.line; line++) {
        const from = line === a.line ? a.character : 0;
        const to = line === b.line ? b.character : lines[line]!.length;
        inLiteral[line] = Math.max(inLiteral[line]!, to - from);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  const out: string[] = [];
  lines.forEach((l, i) => {
    if (l.length > width && inLiteral[i]! < l.length - width) out.push(`${file}:${i + 1} (${l.length} columns)`);
  });
  return out;
}

const sources = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((d) => {
    if (d.isDirectory())
      return d.name === 'gen' || d.name === 'node_modules' || d.name === 'results' ? [] : sources(join(dir, d.name));
    return /\.(ts|mjs)$/.test(d.name) ? [join(dir, d.name)] : [];
  });

describe('line width', () => {
  it(`no line in ${FOLDERS.join(', ')} runs past ${WIDTH} columns but for a literal that cannot be broken`, () => {
    const long = FOLDERS.flatMap(sources).flatMap((f) => longLines(f, readFileSync(join(ROOT, f), 'utf8'), WIDTH));
    expect(long).toEqual([]);
  });

  it('the check sees long code and comments, and lets a long literal through', () => {
    const pad = 'x'.repeat(130);
    const text = [
      `const a = ${'1 + '.repeat(40)}1;`,
      `// ${pad}`,
      `const s = '${pad}';`,
      `const t = \`${pad} \${a} ${pad}\`;`,
      `const u = '${'y'.repeat(20)}' + ${'2 + '.repeat(30)}2;`,
      `/* ${pad} */ const v = 1;`,
    ].join('\n');
    expect(longLines('x.ts', text, WIDTH)).toEqual([
      'x.ts:1 (172 columns)',
      'x.ts:2 (133 columns)',
      'x.ts:5 (157 columns)',
      'x.ts:6 (149 columns)',
    ]);
  });
});
