// The command line of `npm run bench` (bench/cli.ts) and the key comparison
// that checks a change to the bench writes the same figures
// (bench/analysis/result-keys.ts).
import { describe, expect, it } from 'vitest';
import { compareKeys, keyPaths } from '../../bench/analysis/result-keys.ts';
import { parseCommand, TOOLS, usage } from '../../bench/cli.ts';

describe('bench command line', () => {
  it('no arguments, --quick and --keep run the whole comparison', () => {
    expect(parseCommand([])).toEqual({ run: 'main' });
    expect(parseCommand(['--quick'])).toEqual({ run: 'main' });
    expect(parseCommand(['--quick', '--keep'])).toEqual({ run: 'main' });
  });

  it('a tool name runs that tool with the arguments after it', () => {
    expect(parseCommand(['failover', '--runs', '2', '--quick'])).toEqual({
      run: 'tool',
      tool: TOOLS.failover,
      args: ['--runs', '2', '--quick'],
    });
  });

  it('refuses an unknown option or tool instead of running the whole bench', () => {
    expect(parseCommand(['--quik'])).toEqual({ run: 'error', message: 'unknown option --quik' });
    expect(parseCommand(['--quick', 'failover'])).toEqual({ run: 'error', message: 'unknown option failover' });
    expect(parseCommand(['nope'])).toEqual({ run: 'error', message: 'no bench tool named nope' });
  });

  it('--help anywhere asks for the usage, which names every tool', () => {
    expect(parseCommand(['failover', '--help'])).toEqual({ run: 'help' });
    for (const name of Object.keys(TOOLS)) expect(usage()).toMatch(new RegExp(`^  ${name}( |$)`, 'm'));
  });
});

describe('bench results keys', () => {
  it('reads nested objects and arrays into paths, an array read as one element', () => {
    const paths = keyPaths({ a: 1, b: { c: null, d: [] }, s: [{ x: 1 }, { y: 2 }], e: {} });
    expect([...paths].sort()).toEqual(['a', 'b.c', 'b.d[]', 'e{}', 's[].x', 's[].y']);
  });

  it('names the paths only one side has; values do not count', () => {
    expect(compareKeys({ a: 1, r: { x: 1 } }, { a: 2, r: { x: 3 } })).toEqual({ onlyBefore: [], onlyAfter: [] });
    expect(compareKeys({ a: 1, r: { x: 1 } }, { a: 1, r: { y: 1 } })).toEqual({
      onlyBefore: ['r.x'],
      onlyAfter: ['r.y'],
    });
  });
});
