// The XA xid of a Verdict transaction (src/participant/resources/mysql/xid.ts):
// within XA's 64-byte gtrid/bqual limits for any ids, safe in SQL, and
// recognised back only when this participant would have made it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isSafeXid,
  parseXid,
  parseXidText,
  sqlXid,
  xidOf,
  xidScope,
  xidText,
  XA_FORMAT_ID,
  XA_PART_BYTES_MAX,
} from '../../src/participant/resources/mysql/xid.ts';

describe('MySQL XA xid', () => {
  it('names cluster and transaction in the gtrid and the participant in the bqual, readably', () => {
    const x = xidOf(xidScope('local', 'ledger'), 'T42');
    expect(x).toEqual({ gtrid: 'local:T42', bqual: 'ledger', formatId: XA_FORMAT_ID });
    expect(sqlXid(x)).toBe("'local:T42','ledger',1448232020");
    expect(xidText(x)).toBe('local:T42,ledger');
  });

  it('stays within 64 bytes for gtrid and bqual, in the safe alphabet, and parses back to its txn id when readable (any ids)', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 300, unit: 'binary' }),
        fc.string({ minLength: 1, maxLength: 120 }),
        fc.string({ minLength: 1, maxLength: 120 }),
        (txnId, clusterId, participantId) => {
          const scope = xidScope(clusterId, participantId);
          const x = xidOf(scope, txnId);
          expect(Buffer.byteLength(x.gtrid)).toBeLessThanOrEqual(XA_PART_BYTES_MAX);
          expect(Buffer.byteLength(x.bqual)).toBeLessThanOrEqual(XA_PART_BYTES_MAX);
          expect(isSafeXid(x)).toBe(true);
          expect(`${x.gtrid}${x.bqual}`).not.toMatch(/['"\\,]/);
          expect(sqlXid(x)).toBe(`'${x.gtrid}','${x.bqual}',${XA_FORMAT_ID}`);
          const parsed = parseXid(scope, x);
          if (parsed.kind === 'readable') expect(parsed.txnId).toBe(txnId);
          else expect(parsed.kind).toBe('hashed');
        },
      ),
      { numRuns: 300 },
    );
  });

  it('hashes a txn id too long for the gtrid, and two long ids get different xids', () => {
    const scope = xidScope('local', 'ledger');
    const a = xidOf(scope, 'x'.repeat(100));
    const b = xidOf(scope, `${'x'.repeat(99)}y`);
    expect(a.gtrid).toMatch(/^local:#[0-9a-f]{32}$/);
    expect(a.gtrid).not.toBe(b.gtrid);
    expect(parseXid(scope, a)).toEqual({ kind: 'hashed' });
  });

  it('refuses as foreign: another participant, another cluster, another formatID, a look-alike gtrid', () => {
    const scope = xidScope('local', 'ledger');
    const x = xidOf(scope, 'T1');
    expect(parseXid(xidScope('local', 'shop'), x)).toEqual({ kind: 'foreign' });
    expect(parseXid(xidScope('other', 'ledger'), x)).toEqual({ kind: 'foreign' });
    expect(parseXid(scope, { ...x, formatId: 1 })).toEqual({ kind: 'foreign' });
    // lower-case escape: not one we make
    expect(parseXid(scope, { ...x, gtrid: 'local:T%2f1' })).toEqual({ kind: 'foreign' });
    expect(parseXid(scope, { ...x, gtrid: "local:T1'--" })).toEqual({ kind: 'foreign' });
  });

  it('refuses an xid text too long for XA, or of another participant, with the reason', () => {
    const scope = xidScope('local', 'ledger');
    const long = parseXidText(scope, `local:${'x'.repeat(80)},ledger`);
    expect(long).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/too long: XA allows 64 bytes each for gtrid and bqual \(here 86 and 6\)/),
    });
    expect(parseXidText(scope, 'local:T1,shop')).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not one of this participant's/),
    });
    expect(parseXidText(scope, 'local:T1')).toMatchObject({ ok: false });
    expect(parseXidText(scope, 'local:T1,ledger')).toMatchObject({
      ok: true,
      parsed: { kind: 'readable', txnId: 'T1' },
    });
  });
});
