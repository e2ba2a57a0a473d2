// The files of bench/floors/floor-child.ts's floors, written the way the Verdict
// files they stand for are, so that a floor never pays for a disk pattern
// Verdict does not use.
import * as fsModule from 'node:fs';
import { MARK_SLOT_BYTES } from '../../src/storage/mark-file.ts';
import { PREALLOC_BYTES_DEFAULT } from '../../src/storage/segment-log.ts';

/** One of a floor's files, written the way the file it stands for is (openFloorFile). */
export interface FloorFile {
  fd: number;
  /** Writes `buf` to the page cache; the caller fdatasyncs `fd`. */
  write(buf: Uint8Array): void;
  close(): void;
}

// How a floor writes a file, by the end of its name, as Verdict writes the
// file it stands for: "...segment" like a node's log segment
// (src/storage/segment-log.ts: at advancing offsets, with zeros written a
// chunk ahead by the write that reaches the end of the file, so most
// fdatasyncs overwrite blocks the file already has); "...mark" like the mark
// file (src/storage/mark-file.ts: two slots written in turn, in place); any
// other name like a participant's journal (appended to). Plain JavaScript
// source, so the flusher threads run the same function.
export const FLOOR_FILE_SOURCE = `function openFloorFile(fs, path, preallocBytes, slotBytes) {
  if (path.endsWith('mark')) {
    const fd = fs.openSync(path, 'w+');
    fs.writeSync(fd, new Uint8Array(2 * slotBytes), 0, 2 * slotBytes, 0);
    fs.fdatasyncSync(fd);
    let slot = 0;
    return { fd, write(buf) { fs.writeSync(fd, buf, 0, buf.byteLength, slot * slotBytes); slot ^= 1; }, close() { fs.closeSync(fd); } };
  }
  if (path.endsWith('segment')) {
    const fd = fs.openSync(path, 'w+');
    const zeros = new Uint8Array(preallocBytes);
    let at = 0;
    let allocated = 0;
    return {
      fd,
      write(buf) {
        fs.writeSync(fd, buf, 0, buf.byteLength, at);
        at += buf.byteLength;
        if (at > allocated) {
          fs.writeSync(fd, zeros, 0, zeros.byteLength, at);
          allocated = at + zeros.byteLength;
        }
      },
      close() { fs.closeSync(fd); },
    };
  }
  const fd = fs.openSync(path, 'a');
  return { fd, write(buf) { fs.writeSync(fd, buf); }, close() { fs.closeSync(fd); } };
}`;

const openFloorFileIn = new Function(`return ${FLOOR_FILE_SOURCE}`)() as (
  fs: typeof import('node:fs'),
  path: string,
  preallocBytes: number,
  slotBytes: number,
) => FloorFile;

export function openFloorFile(path: string): FloorFile {
  return openFloorFileIn(fsModule, path, PREALLOC_BYTES_DEFAULT, MARK_SLOT_BYTES);
}
