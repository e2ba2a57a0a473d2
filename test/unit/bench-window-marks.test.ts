// The load generator's window lines (bench/harness/window-marks.ts): an orchestrator
// sampling over the measured window must always see "window open" then
// "window closed", once each, before the result line.
import { describe, expect, it } from 'vitest';
import { drain, windowMarks } from '../../bench/harness/window-marks.ts';

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

  it('drain waits for workers that outlive the drain time counted from the start, while the window is still running', async () => {
    const start = performance.now();
    // The window ends 300 ms from now; the workers end at 400 ms; the drain time is 200 ms.
    const w = { measureFrom: start, stopAt: start + 300 };
    let done = false;
    const workers = new Promise<void>((r) => setTimeout(() => ((done = true), r()), 400));
    await drain(workers, w, 200);
    expect(done).toBe(true);
  });

  it('drain gives up on workers stuck past the drain time after the window', async () => {
    const start = performance.now();
    const w = { measureFrom: start, stopAt: start + 50 };
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<void>((r) => (timer = setTimeout(r, 10_000)));
    await drain(stuck, w, 100);
    const tookMs = performance.now() - start;
    clearTimeout(timer);
    expect(tookMs).toBeGreaterThanOrEqual(145);
    expect(tookMs).toBeLessThan(5_000);
  });
});
