/** Resolves after `ms` on the real clock (process code only: the pure layers take time as an argument). */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Resolves on the event loop's next turn, after the I/O already waiting (process code only). */
export const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));
