// The library entry points (verdict/client, participant, saga, outbox,
// server) never end the process: only the CLI (src/cli/) decides to exit.
// A node that stops on a fatal storage error says so through
// RunningNode.failed, and `verdict node` exits with its code.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '..', '..', 'src');

describe('the library never exits the process', () => {
  it('no process.exit or process.abort under src/ outside src/cli/', () => {
    const offenders: string[] = [];
    for (const e of readdirSync(SRC, { withFileTypes: true, recursive: true })) {
      if (!e.isFile() || !e.name.endsWith('.ts')) continue;
      const path = join(e.parentPath, e.name);
      const rel = relative(SRC, path);
      if (rel.startsWith('cli/')) continue;
      const text = readFileSync(path, 'utf8');
      for (const [i, line] of text.split('\n').entries()) {
        if (/\bprocess\.(exit|abort|reallyExit)\s*\(/.test(line) && !/^\s*(\/\/|\*)/.test(line))
          offenders.push(`src/${rel}:${i + 1}: ${line.trim()}`);
      }
    }
    expect(offenders, offenders.join('\n')).toEqual([]);
  });

  it('the check sees a call where there is one', () => {
    expect(/\bprocess\.(exit|abort|reallyExit)\s*\(/.test('void stop().finally(() => process.exit(3));')).toBe(true);
  });
});
