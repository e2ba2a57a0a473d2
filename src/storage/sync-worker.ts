// One trip off the event loop for a batch's two syncs.
//
// A batch with entries is made durable in order: the segment's fdatasync,
// then the mark written and synced (docs/storage.md, "Order of one batch").
// Through Node's thread pool that is two trips, each a thread woken and the
// event loop woken again between them; on a virtual machine each wake-up
// costs more than the code it runs (docs/benchmarks.md). This worker thread
// takes both syncs in one trip: the event loop hands it the segment's file
// descriptor and the mark's bytes in shared memory and wakes it
// (Atomics.notify); it syncs the segment, writes the mark's slot in place
// and syncs it, then posts one message back. The order and the guarantee
// are those of the two-trip path; only the wake-ups between go.
//
// One job at a time: the store's write chain already serializes batches.

import { Worker } from 'node:worker_threads';

/** The worker's source, run with `eval` so that the compiled and the TypeScript builds share it. */
const WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { fdatasyncSync, writeSync } = require('node:fs');
const ctl = new Int32Array(workerData.shared, 0, 8);
const bytes = new Uint8Array(workerData.shared, 32);
for (;;) {
  Atomics.wait(ctl, 0, 0);
  if (Atomics.load(ctl, 0) === 2) break;
  const segmentFd = ctl[1], markFd = ctl[2], length = ctl[3], offset = ctl[4];
  let failure = null;
  let step = 'sync';
  try {
    fdatasyncSync(segmentFd);
    step = 'mark';
    let written = 0;
    while (written < length) written += writeSync(markFd, bytes, written, length - written, offset + written);
    fdatasyncSync(markFd);
  } catch (err) {
    failure = { step, message: String(err && err.message || err), code: err && err.code };
  }
  Atomics.store(ctl, 0, 0);
  parentPort.postMessage(failure);
}
`;

/**
 * The most bytes one mark write carries: a slot (a one-group record is 49 bytes; a record of every group's mark, 37
 * bytes and 32 per group, about 2 KiB at 64 groups).
 */
export const SYNC_WORKER_BYTES_MAX = 4096;

interface Failure {
  step: string;
  message: string;
  code?: string;
}

export class SyncWorker {
  private readonly shared = new SharedArrayBuffer(32 + SYNC_WORKER_BYTES_MAX);
  private readonly ctl = new Int32Array(this.shared, 0, 8);
  private readonly bytes = new Uint8Array(this.shared, 32);
  private readonly worker: Worker;
  private pending: { resolve: () => void; reject: (err: Error) => void } | null = null;
  /** Set once the worker is gone (it failed, or close()): later trips fail at once. */
  private dead: Error | null = null;

  constructor(readonly label: string) {
    // No execArgv: the parent's loader hooks or profiler flags have nothing to do in a loop of two syscalls.
    this.worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { shared: this.shared } });
    // The store keeps a process alive only while it has work; an idle worker must not.
    this.worker.unref();
    this.worker.on('message', (f: Failure | null) => {
      const p = this.pending;
      this.pending = null;
      if (p === null) return;
      if (f === null) p.resolve();
      else
        p.reject(
          Object.assign(
            new Error(
              `${label}: ${f.step === 'sync' ? 'fdatasync of the segment' : 'write and fdatasync of the mark'} failed: ${f.message}`,
            ),
            { code: f.code },
          ),
        );
    });
    const gone = (err: Error): void => {
      this.dead ??= err;
      const p = this.pending;
      this.pending = null;
      p?.reject(this.dead);
    };
    this.worker.on('error', (err) =>
      gone(new Error(`${label}: the sync worker failed: ${err.message}`, { cause: err })),
    );
    this.worker.on('exit', (code) => gone(new Error(`${label}: the sync worker exited (code ${code})`)));
  }

  /**
   * fdatasync(segmentFd), then `record` written at
   * `offset` of markFd and fdatasync(markFd), in that order, in one trip.
   * Resolves once both are synced; rejects with the step that failed.
   */
  run(segmentFd: number, markFd: number, record: Uint8Array, offset: number): Promise<void> {
    if (this.dead) return Promise.reject(this.dead);
    if (this.pending !== null) return Promise.reject(new Error(`${this.label}: a sync trip is already in flight`));
    if (record.byteLength > SYNC_WORKER_BYTES_MAX)
      return Promise.reject(
        new Error(`${this.label}: a mark of ${record.byteLength} bytes is over ${SYNC_WORKER_BYTES_MAX}`),
      );
    this.bytes.set(record);
    this.ctl[1] = segmentFd;
    this.ctl[2] = markFd;
    this.ctl[3] = record.byteLength;
    this.ctl[4] = offset;
    return new Promise<void>((resolve, reject) => {
      this.pending = { resolve, reject };
      // The worker is referenced while a trip is out, so the process waits for it.
      this.worker.ref();
      Atomics.store(this.ctl, 0, 1);
      Atomics.notify(this.ctl, 0);
    }).finally(() => {
      if (this.pending === null && !this.dead) this.worker.unref();
    });
  }

  /** Stops the worker once it is idle (the store calls this after its last write). */
  async close(): Promise<void> {
    if (this.dead) return;
    this.dead = new Error(`${this.label}: the store is closed`);
    // Referenced until it exits, or a process with nothing else to do ends before the worker has stopped.
    this.worker.ref();
    Atomics.store(this.ctl, 0, 2);
    Atomics.notify(this.ctl, 0);
    await new Promise<void>((resolve) => {
      this.worker.once('exit', () => resolve());
    });
  }
}
