// Text from the cluster printed by the CLI (src/cli/terminal-text.ts): every
// control character is shown as a visible escape, plain text is unchanged.
import { describe, expect, it } from 'vitest';
import { printable } from '../../src/cli/terminal-text.ts';

describe('printable', () => {
  it('escapes C0, DEL, C1 and the Unicode line separators, and leaves other text alone', () => {
    expect(printable('insufficient funds: 12,400 ₽ — café')).toBe('insufficient funds: 12,400 ₽ — café');
    expect(printable('a\nb\r\tc\u001b[2K')).toBe('a\\nb\\r\\tc\\e[2K');
    expect(printable('\u0000\u0007\u007f')).toBe('\\x00\\x07\\x7f');
    expect(printable('\u009b31m\u2028')).toBe('\\u{9b}31m\\u{2028}');
    // Nothing printable is left that a terminal acts on.
    const all = Array.from({ length: 0xa0 }, (_, i) => String.fromCharCode(i)).join('');
    const controls = [...printable(all)].filter(
      (ch) => ch.charCodeAt(0) < 0x20 || (ch.charCodeAt(0) >= 0x7f && ch.charCodeAt(0) <= 0x9f),
    );
    expect(controls).toEqual([]);
  });
});
