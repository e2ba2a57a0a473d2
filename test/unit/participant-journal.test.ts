// The participant's file journal on a real disk: round trip, group commit,
// a torn tail, corruption in the middle, compaction, and a SIGKILLed writer.
import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { crc32 } from 'node:zlib';
import { ParticipantEngine } from '../../src/participant/engine.ts';
import { FileJournal, JournalCorruptError } from '../../src/participant/journal.ts';
import { memoryPayload } from '../../src/participant/memory.ts';
import { MemoryState } from '../../src/participant/memory-state.ts';
import { isJournalRecord, toBase64, type JournalRecord } from '../../src/participant/types.ts';
import { crashKey, crashValue } from './fixtures/participant-journal-payload.ts';
import { killWhileWriting } from './fixtures/kill-writer.ts';

const dirs: string[] = [];
const journals: FileJournal<JournalRecord>[] = [];

afterEach(async () => {
  for (const j of journals.splice(0)) await j.close();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempFile(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'verdict-pjournal-'));
  dirs.push(d);
  return join(d, 'journal.log');
}

async function openJournal(
  path: string,
  compactAfterRecords = 10_000,
): Promise<{ journal: FileJournal<JournalRecord>; state: MemoryState; warnings: string[] }> {
  const state = new MemoryState();
  const warnings: string[] = [];
  const log = {
    info: () => {},
    warn: (o: object, m: string) => void warnings.push(`${m} ${JSON.stringify(o)}`),
    error: () => {},
  };
  const journal = await FileJournal.open<JournalRecord>({
    path,
    fold: state,
    isRecord: isJournalRecord,
    compactAfterRecords,
    log,
  });
  journals.push(journal);
  return { journal, state, warnings };
}

async function closeJournal(j: FileJournal<JournalRecord>): Promise<void> {
  journals.splice(journals.indexOf(j), 1);
  await j.close();
}

function append(j: FileJournal<JournalRecord>, r: JournalRecord): Promise<void> {
  return new Promise((resolve, reject) => j.append(r, (err) => (err ? reject(err) : resolve())));
}

const prepared = (i: number): JournalRecord => ({
  kind: 'prepared',
  txnId: `T${i}`,
  atMs: i,
  payloadB64: toBase64(memoryPayload({ [`k${i}`]: `v${i}` })),
  participants: ['p1', 'p2'],
});
const committed = (i: number): JournalRecord => ({ kind: 'committed', txnId: `T${i}`, atMs: i });
const aborted = (i: number): JournalRecord => ({ kind: 'aborted', txnId: `T${i}`, atMs: i });

/** Writes T0..T(n-1): even ones commit, every third odd one aborts, the rest stay prepared. */
async function fill(j: FileJournal<JournalRecord>, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await append(j, prepared(i));
    if (i % 2 === 0) await append(j, committed(i));
    else if (i % 3 === 0) await append(j, aborted(i));
  }
}

function summary(s: MemoryState): unknown {
  return { data: [...s.data], prepared: [...s.prepared], decided: [...s.decided] };
}

describe('participant journal', () => {
  it('round trip: what was appended is replayed on open, in order', async () => {
    const path = await tempFile();
    const a = await openJournal(path);
    await fill(a.journal, 10);
    const before = summary(a.state);
    await closeJournal(a.journal);
    const b = await openJournal(path);
    expect(summary(b.state)).toEqual(before);
    expect(b.state.data.get('k4')).toBe('v4');
    expect([...b.state.prepared.keys()]).toEqual(['T1', 'T5', 'T7']);
    expect(b.journal.stats().recordsInFile).toBe(10 + 5 + 2);
    expect(b.warnings).toEqual([]);
  });

  it('groups appends that arrive together into one frame and one fdatasync', async () => {
    const { journal } = await openJournal(await tempFile());
    await Promise.all(Array.from({ length: 50 }, (_, i) => append(journal, prepared(i))));
    expect(journal.stats()).toMatchObject({ frames: 1, syncs: 1, recordsInFile: 50 });
  });

  it('a torn last frame (crash mid-write) is truncated on open, with a warning', async () => {
    const path = await tempFile();
    const a = await openJournal(path);
    await fill(a.journal, 4);
    await closeJournal(a.journal);
    const intact = (await stat(path)).size;
    // Half a frame: a header announcing 100 bytes and 10 of them.
    const torn = Buffer.alloc(18);
    torn.writeUInt32BE(100, 0);
    await appendFile(path, torn);
    const b = await openJournal(path);
    expect(b.state.data.get('k2')).toBe('v2');
    expect((await stat(path)).size).toBe(intact);
    expect(b.warnings.join()).toMatch(/torn tail.*"offsetBytes":\d+/);
    // The journal goes on after the truncation point.
    await append(b.journal, committed(1));
    await closeJournal(b.journal);
    expect((await openJournal(path)).state.decided.get('T1')?.outcome).toBe('committed');
  });

  it('a zero-filled tail (file extended, data never written) is a torn tail too', async () => {
    const path = await tempFile();
    const a = await openJournal(path);
    await fill(a.journal, 3);
    await closeJournal(a.journal);
    const intact = (await stat(path)).size;
    await appendFile(path, Buffer.alloc(4096));
    const b = await openJournal(path);
    expect((await stat(path)).size).toBe(intact);
    expect(b.state.data.get('k2')).toBe('v2');
  });

  it('a bad CRC in the middle is corruption: open refuses, naming the file and the offset', async () => {
    const path = await tempFile();
    const a = await openJournal(path);
    await append(a.journal, prepared(0));
    await append(a.journal, prepared(1));
    await append(a.journal, committed(0));
    await closeJournal(a.journal);
    const buf = await readFile(path);
    const second = 8 + buf.readUInt32BE(0);
    buf[second + 8 + 5] ^= 0x01; // one bit in the second frame's payload
    await writeFile(path, buf);
    const err = await openJournal(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JournalCorruptError);
    expect((err as JournalCorruptError).message).toContain(
      `participant journal ${path} is corrupt at byte offset ${second}: CRC mismatch`,
    );
    expect((err as JournalCorruptError).offsetBytes).toBe(second);
    // Refusing means touching nothing: the file is as it was.
    expect(await readFile(path)).toEqual(buf);
  });

  it('compaction rewrites the journal as a snapshot and preserves the state', async () => {
    const path = await tempFile();
    const a = await openJournal(path, 50);
    await fill(a.journal, 200);
    const stats = a.journal.stats();
    expect(stats.compactions).toBeGreaterThan(0);
    // Only what is still live (data, prepared, recent decided ids) plus what came after the last snapshot.
    expect(stats.recordsInFile).toBeLessThan(200 + 100 + 33);
    const before = summary(a.state);
    await closeJournal(a.journal);
    const b = await openJournal(path, 50);
    expect(summary(b.state)).toEqual(before);
    expect(b.state.data.size).toBe(100);
    expect(b.state.prepared.size).toBe(67);
  });

  it('compaction by size: once the frames appended since the last one hold compactAfterBytes, the state is preserved', async () => {
    const path = await tempFile();
    const open = (): Promise<FileJournal<JournalRecord>> =>
      FileJournal.open<JournalRecord>({
        path,
        fold: new MemoryState(),
        isRecord: isJournalRecord,
        compactAfterBytes: 4_096,
      }).then((j) => (journals.push(j), j));
    const a = await open();
    const stateA = (a as unknown as { o: { fold: MemoryState } }).o.fold;
    await fill(a, 200);
    expect(a.stats().compactions).toBeGreaterThan(0);
    const before = summary(stateA);
    await closeJournal(a);
    const b = await open();
    expect(summary((b as unknown as { o: { fold: MemoryState } }).o.fold)).toEqual(before);
  });

  it('compaction by time: a journal appended to after compactAfterMs is compacted; below every bound it is not', async () => {
    const path = await tempFile();
    const j = await FileJournal.open<JournalRecord>({
      path,
      fold: new MemoryState(),
      isRecord: isJournalRecord,
      compactAfterMs: 1_000,
    });
    journals.push(j);
    await append(j, prepared(0));
    await append(j, prepared(1));
    expect(j.stats().compactions).toBe(0);
    await new Promise((r) => setTimeout(r, 1_100));
    await append(j, committed(0));
    // Compaction runs after the append is reported; close waits for it.
    await j.close();
    expect(j.stats().compactions).toBe(1);
  });

  it("a deferred record (a DECISION) shares the next append's frame and fdatasync, and is reported only once synced", async () => {
    const j = await FileJournal.open<JournalRecord>({
      path: await tempFile(),
      fold: new MemoryState(),
      isRecord: isJournalRecord,
      deferred: (r) => r.kind === 'committed' || r.kind === 'aborted',
      deferredSyncMs: 1_000,
    });
    journals.push(j);
    await append(j, prepared(0));
    expect(j.stats()).toMatchObject({ frames: 1, syncs: 1 });
    let decided = false;
    const decision = append(j, committed(0)).then(() => (decided = true));
    await new Promise((r) => setTimeout(r, 50));
    // Waiting for company: nothing written, nothing reported.
    expect(decided).toBe(false);
    expect(j.stats()).toMatchObject({ frames: 1, syncs: 1, recordsInFile: 1 });
    await append(j, prepared(1));
    await decision;
    expect(j.stats()).toMatchObject({ frames: 2, syncs: 2, recordsInFile: 3 });
  });

  it('a deferred record with no company is synced alone after deferredSyncMs', async () => {
    const j = await FileJournal.open<JournalRecord>({
      path: await tempFile(),
      fold: new MemoryState(),
      isRecord: isJournalRecord,
      deferred: () => true,
      deferredSyncMs: 5,
    });
    journals.push(j);
    await append(j, prepared(0));
    expect(j.stats()).toMatchObject({ frames: 1, syncs: 1, recordsInFile: 1 });
  });

  it("a lazy record (a prepared record the database holds) starts no sync: it rides in its deferred DECISION's frame, one fdatasync for both", async () => {
    const j = await FileJournal.open<JournalRecord>({
      path: await tempFile(),
      fold: new MemoryState(),
      isRecord: isJournalRecord,
      deferred: (r) => r.kind === 'committed',
      deferredSyncMs: 5,
      lazy: (r) => r.kind === 'prepared',
      lazySyncMs: 60_000,
    });
    journals.push(j);
    let preparedSynced = false;
    const prep = append(j, prepared(0)).then(() => (preparedSynced = true));
    await new Promise((r) => setTimeout(r, 100));
    // Far longer than deferredSyncMs: a lazy record alone waits for company.
    expect(preparedSynced).toBe(false);
    expect(j.stats()).toMatchObject({ frames: 0, syncs: 0 });
    await append(j, committed(0));
    await prep;
    expect(j.stats()).toMatchObject({ frames: 1, syncs: 1, recordsInFile: 2 });
  });

  it('a lazy record with no company is synced alone after lazySyncMs', async () => {
    const j = await FileJournal.open<JournalRecord>({
      path: await tempFile(),
      fold: new MemoryState(),
      isRecord: isJournalRecord,
      lazy: () => true,
      lazySyncMs: 20,
    });
    journals.push(j);
    await append(j, prepared(0));
    expect(j.stats()).toMatchObject({ frames: 1, syncs: 1, recordsInFile: 1 });
  });

  it('close writes a deferred record still waiting for company', async () => {
    const path = await tempFile();
    const j = await FileJournal.open<JournalRecord>({
      path,
      fold: new MemoryState(),
      isRecord: isJournalRecord,
      deferred: () => true,
      deferredSyncMs: 1_000,
    });
    const done = append(j, prepared(0));
    await j.close();
    await done;
    const b = await openJournal(path);
    expect([...b.state.prepared.keys()]).toEqual(['T0']);
  });

  it('after a failed write every later append fails too, until a restart', async () => {
    const { journal } = await openJournal(await tempFile());
    await append(journal, prepared(0));
    // Close the file under the journal: the next write fails (EBADF).
    const fh = (journal as unknown as { fh: { close(): Promise<void> } }).fh;
    await fh.close();
    await expect(append(journal, prepared(1))).rejects.toThrow();
    await expect(append(journal, prepared(2))).rejects.toThrow(/failed earlier.*restart the participant/);
    journals.splice(journals.indexOf(journal), 1);
  });

  it('R4: a writer SIGKILLed while appending (and compacting) loses no record it reported synced', async () => {
    const path = await tempFile();
    const { lines, errOut } = await killWhileWriting('test/unit/fixtures/participant-journal-writer.ts', path);
    const preparedIds = lines.filter((l) => l.startsWith('P ')).map((l) => Number(l.slice(2)));
    const committedIds = lines.filter((l) => l.startsWith('C ')).map((l) => Number(l.slice(2)));
    expect(committedIds.length, errOut).toBeGreaterThan(0);

    const { state } = await openJournal(path);
    for (const i of preparedIds) {
      const known = state.prepared.has(`T${i}`) || state.decided.has(`T${i}`);
      expect(known, `T${i} was reported synced as prepared`).toBe(true);
    }
    for (const i of committedIds) {
      expect(state.decided.get(`T${i}`)?.outcome, `T${i} was reported synced as committed`).toBe('committed');
      expect(state.data.get(crashKey(i))).toBe(crashValue(i));
    }
    // And nothing that was never written: odd transactions never commit.
    for (const [txnId, d] of state.decided)
      expect(Number(txnId.slice(1)) % 2 === 0 && d.outcome === 'committed').toBe(true);
  }, 60_000);
});

describe('participant journal: the on-disk spelling of outcomes', () => {
  /** One frame as every version has written it: [u32 length][u32 CRC-32][JSON array], by hand, not by FileJournal. */
  function frame(records: object[]): Buffer {
    const payload = Buffer.from(JSON.stringify(records), 'utf8');
    const header = Buffer.alloc(8);
    header.writeUInt32BE(payload.byteLength, 0);
    header.writeUInt32BE(crc32(payload), 4);
    return Buffer.concat([header, payload]);
  }

  it('a journal written with lower-case outcome kinds recovers as COMMITTED / ABORTED, and new records keep the lower-case kinds', async () => {
    const path = await tempFile();
    const payloadB64 = toBase64(memoryPayload({ a: '1' }));
    await writeFile(
      path,
      Buffer.concat([
        frame([
          { kind: 'prepared', txnId: 'T1', atMs: 1, payloadB64, participants: ['p1', 'p2'] },
          { kind: 'prepared', txnId: 'T2', atMs: 2, payloadB64, participants: ['p1', 'p2'] },
        ]),
        frame([
          { kind: 'committed', txnId: 'T1', atMs: 3 },
          { kind: 'aborted', txnId: 'T2', atMs: 4 },
          { kind: 'prepared', txnId: 'T3', atMs: 5, payloadB64, participants: ['p1', 'p2'] },
        ]),
      ]),
    );
    const { journal, state } = await openJournal(path);
    expect(state.data.get('a')).toBe('1');
    const engine = new ParticipantEngine({
      clusterId: 'c',
      participantId: 'p1',
      resource: {
        prepare: (_t, _p, cb) => cb(null, { yes: true, reason: '' }),
        commit: (_t, cb) => cb(null),
        abort: (_t, cb) => cb(null),
      },
      journal,
      clock: { nowMs: () => 10 },
      schedule: () => () => {},
      askOutcome: (_txnId, cb) => cb(null, 'IN_PROGRESS'),
    });
    engine.recover(state.txnRecords());
    engine.start();
    expect([engine.stateOf('T1'), engine.stateOf('T2'), engine.stateOf('T3')]).toEqual([
      'COMMITTED',
      'ABORTED',
      'prepared',
    ]);
    // The engine applies a DECISION for T3 and journals it in the spelling the file has always had.
    const acked = await new Promise<unknown>((resolve) =>
      engine.decide({ clusterId: 'c', txnId: 'T3', participantId: 'p1', outcome: 'commit', reason: '' }, (err, ack) =>
        resolve(err ?? ack),
      ),
    );
    expect(acked).toMatchObject({ txnId: 'T3' });
    expect(engine.stateOf('T3')).toBe('COMMITTED');
    engine.stop();
    await closeJournal(journal);
    const text = (await readFile(path)).toString('latin1');
    expect(text).toContain('{"kind":"committed","txnId":"T3"');
    expect(text).not.toMatch(/"kind":"(COMMITTED|ABORTED)"/);
  });
});
