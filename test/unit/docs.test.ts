// The repository documents itself, and these tests keep two things about it
// true: the rule index in docs/correctness.md names code and tests that
// exist (every rule R1–R7 with at least one test whose name cites it), and no
// link in a Markdown file leaves the repository or points at a file that is
// not there.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const RULES = ['R1', 'R2', 'R3', 'R4', 'R5', 'R6', 'R7'];

/** Pages other branches are writing; a link to one is accepted while it is absent, and checked like any other once it exists. */
const PAGES_IN_FLIGHT = new Set(['getting-started', 'postgres', 'tls', 'cli', 'security', 'storage', 'limits', 'hardening-raft', 'protocol-outcomes', 'mysql'].map((p) => `docs/${p}.md`));

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
          expect(new RegExp(`^\\s*(?:export )?(?:async )?(?:private |protected |static )*(?:function )?${fn}\\s*[(<]`, 'm').test(code), `${rule}: ${file} defines no ${fn}()`).toBe(true);
        }
      }
      const tests = [...proved.matchAll(/`(test\/[^`]+\.test\.ts)`/g)].map((m) => m[1]!);
      expect(tests.length, `${rule} names no test`).toBeGreaterThan(0);
      for (const file of tests) {
        expect(existsSync(join(ROOT, file)), `${rule}: ${file} is gone`).toBe(true);
        const code = readFileSync(join(ROOT, file), 'utf8');
        expect(new RegExp(`\\b(?:it|test)\\(\\s*['"\`](?:[A-Z0-9/]*/)?${rule}\\b`).test(code), `${rule}: ${file} has no test whose name cites ${rule}`).toBe(true);
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

describe('links in the repository', () => {
  const files = markdownFiles(ROOT);

  it('finds the front door and the docs', () => {
    expect(files.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(['README.md', 'docs/correctness.md', 'docs/protocol.md', 'docs/architecture.md']));
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
        if (target.startsWith('#')) continue;
        const path = resolve(dirname(file), target.split('#')[0]!);
        const rel = relative(ROOT, path);
        if (rel.startsWith('..')) bad.push(`${where} points outside the repository`);
        else if (!existsSync(path) && !PAGES_IN_FLIGHT.has(rel)) bad.push(`${where} names a file that is not there`);
      }
    }
    expect(bad).toEqual([]);
  });
});
