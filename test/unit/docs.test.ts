// The repository documents itself, and these tests keep two things about it
// true: the rule index in docs/correctness.md names code and tests that
// exist (every rule R1–R7 with at least one test whose name cites it), and no
// link in a Markdown file leaves the repository or points at a file (or a
// heading in it) that is not there.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const RULES = ['R1', 'R2', 'R3', 'R4', 'R5', 'R6', 'R7'];

function indexRows(): Map<string, string> {
  const text = readFileSync(join(ROOT, 'docs', 'correctness.md'), 'utf8');
  const section = text.slice(text.indexOf('## Rule index'));
  const rows = new Map<string, string>();
  for (const m of section.matchAll(/^\| (R\d) \|(.*)$/gm)) rows.set(m[1]!, m[2]!);
  return rows;
}

describe('docs/correctness.md rule index', () => {
  const rows = indexRows();

  it('has a row for every rule R1–R7', () => {
    expect([...rows.keys()].sort()).toEqual(RULES);
  });

  for (const rule of RULES) {
    it(`${rule}: every cited function exists in its file, and a cited test file has a test named after the rule`, () => {
      const row = rows.get(rule) ?? '';
      const [enforced = '', proved = ''] = row.split('|');
      const pairs = [...enforced.matchAll(/`(src\/[^`]+\.ts)`((?:,? `[A-Za-z_]+\(\)`)+)/g)];
      expect(pairs.length, `${rule} names no enforcing code`).toBeGreaterThan(0);
      for (const [, file, fns] of pairs) {
        expect(existsSync(join(ROOT, file!)), `${rule}: ${file} is gone`).toBe(true);
        const code = readFileSync(join(ROOT, file!), 'utf8');
        for (const [, fn] of fns!.matchAll(/`([A-Za-z_]+)\(\)`/g)) {
          // A definition: `name(`, `name<`, or `function name(`, at the start of a (method) line.
          expect(
            new RegExp(
              `^\\s*(?:export )?(?:async )?(?:private |protected |static )*(?:function )?${fn}\\s*[(<]`,
              'm',
            ).test(code),
            `${rule}: ${file} defines no ${fn}()`,
          ).toBe(true);
        }
      }
      const tests = [...proved.matchAll(/`(test\/[^`]+\.test\.ts)`/g)].map((m) => m[1]!);
      expect(tests.length, `${rule} names no test`).toBeGreaterThan(0);
      for (const file of tests) {
        expect(existsSync(join(ROOT, file)), `${rule}: ${file} is gone`).toBe(true);
        const code = readFileSync(join(ROOT, file), 'utf8');
        expect(
          new RegExp(`\\b(?:it|test)\\(\\s*['"\`](?:[A-Z0-9/]*/)?${rule}\\b`).test(code),
          `${rule}: ${file} has no test whose name cites ${rule}`,
        ).toBe(true);
      }
    });
  }
});

function markdownFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (['node_modules', 'dist', 'data', '.git', '.verdict'].includes(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) markdownFiles(p, out);
    else if (e.name.endsWith('.md')) out.push(p);
  }
  return out;
}

/** GitHub's anchor for a heading: lower case, code marks and punctuation dropped, spaces to hyphens. */
function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/**
 * The anchors a Markdown file's headings make (outside code blocks); a repeated heading gets -1, -2, … as on GitHub.
 */
function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.matchAll(/^#{1,6} (.*)$/gm)) {
    const slug = headingSlug(m[1]!);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

describe('links in the repository', () => {
  const files = markdownFiles(ROOT);

  it('reads a heading into the anchor GitHub gives it', () => {
    expect(headingSlug('2PC, TCC, sagas: how to choose')).toBe('2pc-tcc-sagas-how-to-choose');
    expect(headingSlug("From the client's side: `verdict txn`")).toBe('from-the-clients-side-verdict-txn');
    expect(headingSlug('7. The web console')).toBe('7-the-web-console');
  });

  it('finds the front door and the docs', () => {
    expect(files.map((f) => relative(ROOT, f))).toEqual(
      expect.arrayContaining(['README.md', 'docs/correctness.md', 'docs/protocol.md', 'docs/architecture.md']),
    );
  });

  it('no link leaves the repository, and every relative link names a file in it', () => {
    const bad: string[] = [];
    for (const file of files) {
      // Links outside code blocks: [text](target).
      const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        const where = `${relative(ROOT, file)}: ${target}`;
        if (/^[a-z]+:/i.test(target) || target.startsWith('//')) {
          bad.push(`${where} leaves the repository`);
          continue;
        }
        const [name, fragment] = target.split('#') as [string, string | undefined];
        const path = name === '' ? file : resolve(dirname(file), name);
        const rel = relative(ROOT, path);
        if (rel.startsWith('..')) bad.push(`${where} points outside the repository`);
        else if (!existsSync(path)) bad.push(`${where} names a file that is not there`);
        else if (fragment !== undefined && path.endsWith('.md') && !anchorsOf(path).has(fragment))
          bad.push(`${where} names a heading that is not there`);
      }
    }
    expect(bad).toEqual([]);
  });
});

describe('docs/benchmarks.md', () => {
  it('stays a reference of under 200 lines: how to run, how to read, the targets and what bounds them (the figures are in bench/REPORT.md)', () => {
    const lines = readFileSync(join(ROOT, 'docs/benchmarks.md'), 'utf8').trimEnd().split('\n').length;
    expect(lines).toBeLessThan(200);
  });
});
