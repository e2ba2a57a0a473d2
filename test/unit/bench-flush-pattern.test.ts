// The flush-pattern floor (bench/floors/floor-child.ts): five threads flushing real
// files on this machine's disk in the patterns of one transaction, and
// sixteen more standing for the participant sweep's journals.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { FlushPatternFloor } from '../../bench/floors/floor-child.ts';

it('measures every pattern the same number of times on real files, and leaves none behind', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-flush-pattern-'));
  try {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join('bench', 'floors', 'floor-child.ts'),
        JSON.stringify({ mode: 'flush-pattern', dir, bytes: 200, samplesMax: 20, measureMs: 10_000 }),
      ],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code).toBe(0);
    const r = JSON.parse(out) as FlushPatternFloor;
    expect(Object.keys(r)).toEqual([
      'classic1',
      'classic3',
      'parallel3',
      'parallel3_one_sync',
      'participants1',
      'participants16',
    ]);
    for (const s of Object.values(r) as NonNullable<FlushPatternFloor['participants1']>[]) {
      expect(s.count).toBe(20);
      // At least one real fdatasync of a 200-byte append: never free.
      expect(s.p50_us).toBeGreaterThan(0);
    }
    expect(readdirSync(dir)).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
