// The floors' files (bench/floors/floor-file.ts) are written the way the Verdict
// files they stand for are: a segment over zeros written ahead, a mark in
// two slots in place, a journal appended to.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { openFloorFile } from '../../bench/floors/floor-file.ts';
import { MARK_SLOT_BYTES } from '../../src/storage/mark-file.ts';
import { PREALLOC_BYTES_DEFAULT } from '../../src/storage/segment-log.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function writeTimes(name: string, n: number): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-floor-file-'));
  dirs.push(dir);
  const path = join(dir, name);
  const f = openFloorFile(path);
  for (let i = 1; i <= n; i++) f.write(Buffer.alloc(200, i));
  f.close();
  expect(statSync(path).size).toBe(readFileSync(path).byteLength);
  return readFileSync(path);
}

it('a segment is written at advancing offsets with zeros a chunk ahead, which later writes go over', () => {
  const buf = writeTimes('n1-segment', 3);
  expect(buf.byteLength).toBe(200 + PREALLOC_BYTES_DEFAULT);
  expect([buf[0], buf[200], buf[400], buf[599]]).toEqual([1, 2, 3, 3]);
  expect(buf.subarray(600).every((b) => b === 0)).toBe(true);
});

it('a mark is written in two slots in turn, and the file never grows', () => {
  const buf = writeTimes('n1-mark', 5);
  expect(buf.byteLength).toBe(2 * MARK_SLOT_BYTES);
  expect([buf[0], buf[MARK_SLOT_BYTES]]).toEqual([5, 4]);
});

it('a journal is appended to', () => {
  const buf = writeTimes('p3-journal', 3);
  expect(buf.byteLength).toBe(600);
  expect([buf[0], buf[200], buf[400]]).toEqual([1, 2, 3]);
});
