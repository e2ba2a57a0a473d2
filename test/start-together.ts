// Starting several servers at once in a test's setup (a PostgreSQL, a NATS
// server, a cluster) without leaking any when one of them fails: every start
// is let finish before the failure is thrown, and those that did start are
// stopped (anything with a stop() method; a cluster of the process harness is
// registered for cleanup when it is created, so letting its start finish is
// enough). With Promise.all the first failure returns at once, the others
// go on starting after the file's cleanup has run, and nothing stops them.
interface Stoppable {
  stop(): Promise<void>;
}

function stoppable(v: unknown): v is Stoppable {
  return typeof v === 'object' && v !== null && typeof (v as { stop?: unknown }).stop === 'function';
}

/** Awaits every start; on any failure stops what started and throws the first error. */
export async function startTogether<T extends readonly unknown[]>(
  starts: { [K in keyof T]: Promise<T[K]> },
): Promise<T> {
  const settled = await Promise.allSettled(starts as readonly Promise<unknown>[]);
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure === undefined) return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
  await Promise.allSettled(
    settled.map((r) => (r.status === 'fulfilled' && stoppable(r.value) ? r.value.stop() : undefined)),
  );
  throw failure.reason;
}
