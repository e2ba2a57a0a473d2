// The load generator's window lines (bench/window-marks.ts): an orchestrator
// sampling over the measured window must always see "window open" then
// "window closed", once each, before the result line.
import { describe, expect, it } from 'vitest';
import { windowMarks } from '../../bench/window-marks.ts';

describe('bench window marks', () => {
  it('prints "window closed" before the result even when its timer never ran, and each line once, in order', () => {
    const lines: string[] = [];
    const marks = windowMarks((l) => lines.push(l));
    marks.open();
    // The workers finished and the result is about to be written; the close timer has not fired.
    marks.close();
    lines.push('{"result":1}\n');
    // A late timer changes nothing.
    marks.close();
    marks.open();
    expect(lines).toEqual(['window open\n', 'window closed\n', '{"result":1}\n']);
  });

  it('opens the window before closing it when neither timer ran', () => {
    const lines: string[] = [];
    windowMarks((l) => lines.push(l)).close();
    expect(lines).toEqual(['window open\n', 'window closed\n']);
  });
});
