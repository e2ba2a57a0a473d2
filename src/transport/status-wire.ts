// The protobuf decoding of NodeStatus (proto/raft.proto), by hand, for the
// CLI's fast status path (src/transport/h2-unary.ts): loading protobufjs and
// proto-loader to read one small message costs a cold `verdict status` more
// than the call itself. It yields exactly what proto-loader yields under
// LOAD_OPTIONS (camelCase, numbers, every field present), which
// test/unit/status-wire.test.ts checks against proto-loader's own decoder.
//
// The bytes come from the network: every length, wire type and number is
// checked, and a bad one is a StatusWireError naming the field, never an
// exception from deeper down. Unknown fields are skipped, as protobuf
// requires, so a newer node's status still reads.
import type { NodeStatus, PeerStatus } from './proto.ts';

/** The wire does not hold a NodeStatus: the reason names the field. */
export class StatusWireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StatusWireError';
  }
}

const VARINT = 0;
const FIXED64 = 1;
const LENGTH = 2;
const FIXED32 = 5;

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** A version string is a semver, a few dozen characters at most. */
const VERSION_CHARS_MAX = 64;
/** A console URL is a scheme, a host and a port. */
const CONSOLE_URL_CHARS_MAX = 300;

class Reader {
  pos = 0;
  constructor(
    private readonly buf: Uint8Array,
    private readonly what: string,
  ) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  fail(why: string): never {
    throw new StatusWireError(`${this.what}: ${why} at byte ${this.pos}`);
  }

  /** A varint as a JS number; refuses more than 10 bytes and values past 2^53 (no count or index gets there). */
  varint(field: string): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) this.fail(`${field} ends inside a varint`);
      const b = this.buf[this.pos++];
      value += (b & 0x7f) * scale;
      scale *= 128;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(value)) this.fail(`${field} is ${value}, beyond 2^53`);
        return value;
      }
    }
    return this.fail(`${field} is a varint longer than 10 bytes`);
  }

  bytes(field: string): Uint8Array {
    const n = this.varint(`${field} length`);
    if (n > this.buf.length - this.pos) this.fail(`${field} claims ${n} bytes, ${this.buf.length - this.pos} remain`);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  string(field: string): string {
    const b = this.bytes(field);
    try {
      return utf8.decode(b);
    } catch {
      return this.fail(`${field} is not UTF-8`);
    }
  }

  skip(wireType: number, field: number): void {
    if (wireType === VARINT) this.varint(`field ${field}`);
    else if (wireType === LENGTH) this.bytes(`field ${field}`);
    else if (wireType === FIXED64 || wireType === FIXED32) {
      const n = wireType === FIXED64 ? 8 : 4;
      if (n > this.buf.length - this.pos) this.fail(`field ${field} ends early`);
      this.pos += n;
    } else this.fail(`field ${field} has wire type ${wireType}, which this decoder does not know`);
  }

  /** Calls `field(number, wireType)` for each field; `field` reads the value or returns false to skip it. */
  fields(field: (n: number, wireType: number) => boolean): void {
    while (!this.done) {
      const tag = this.varint('tag');
      const n = Math.floor(tag / 8);
      const wireType = tag % 8;
      if (n === 0) this.fail('field number 0');
      if (!field(n, wireType)) this.skip(wireType, n);
    }
  }

  expect(wireType: number, want: number, name: string): void {
    if (wireType !== want) this.fail(`${name} has wire type ${wireType}, expected ${want}`);
  }

  /** A string field's value, refused when the field came with another wire type. */
  stringField(wireType: number, name: string): string {
    this.expect(wireType, LENGTH, name);
    return this.string(name);
  }

  /** A uint64/uint32 field's value, refused when the field came with another wire type. */
  varintField(wireType: number, name: string): number {
    this.expect(wireType, VARINT, name);
    return this.varint(name);
  }
}

const UINT32_MAX = 0xffff_ffff;

function decodePeer(buf: Uint8Array, i: number): PeerStatus {
  const p: PeerStatus = { nodeId: '', address: '', matchIndex: 0, nextIndex: 0, state: '' };
  const r = new Reader(buf, `NodeStatus.peers[${i}]`);
  r.fields((n, wt) => {
    if (n === 1) p.nodeId = r.stringField(wt, 'node_id');
    else if (n === 2) p.address = r.stringField(wt, 'address');
    else if (n === 3) p.matchIndex = r.varintField(wt, 'match_index');
    else if (n === 4) p.nextIndex = r.varintField(wt, 'next_index');
    else if (n === 5) p.state = r.stringField(wt, 'state');
    else return false;
    return true;
  });
  return p;
}

/** A NodeStatus message's bytes, decoded and checked. */
export function decodeNodeStatus(buf: Uint8Array): NodeStatus {
  const s: NodeStatus = {
    clusterId: '',
    nodeId: '',
    address: '',
    role: '',
    term: 0,
    leaderId: '',
    commitIndex: 0,
    appliedIndex: 0,
    lastIndex: 0,
    firstIndex: 0,
    peers: [],
    pid: 0,
    version: '',
    consoleUrl: '',
  };
  const r = new Reader(buf, 'NodeStatus');
  r.fields((n, wt) => {
    if (n === 1) s.clusterId = r.stringField(wt, 'cluster_id');
    else if (n === 2) s.nodeId = r.stringField(wt, 'node_id');
    else if (n === 3) s.address = r.stringField(wt, 'address');
    else if (n === 4) s.role = r.stringField(wt, 'role');
    else if (n === 5) s.term = r.varintField(wt, 'term');
    else if (n === 6) s.leaderId = r.stringField(wt, 'leader_id');
    else if (n === 7) s.commitIndex = r.varintField(wt, 'commit_index');
    else if (n === 8) s.appliedIndex = r.varintField(wt, 'applied_index');
    else if (n === 9) s.lastIndex = r.varintField(wt, 'last_index');
    else if (n === 10) s.firstIndex = r.varintField(wt, 'first_index');
    else if (n === 11) {
      r.expect(wt, LENGTH, 'peers');
      s.peers.push(decodePeer(r.bytes('peers'), s.peers.length));
    } else if (n === 12) {
      s.pid = r.varintField(wt, 'pid');
      if (s.pid > UINT32_MAX) r.fail(`pid is ${s.pid}, beyond uint32`);
    } else if (n === 13) {
      s.version = r.stringField(wt, 'version');
      if (s.version.length > VERSION_CHARS_MAX)
        r.fail(`version is ${s.version.length} characters, more than ${VERSION_CHARS_MAX}`);
    } else if (n === 14) {
      s.consoleUrl = r.stringField(wt, 'console_url');
      if (s.consoleUrl.length > CONSOLE_URL_CHARS_MAX)
        r.fail(`console_url is ${s.consoleUrl.length} characters, more than ${CONSOLE_URL_CHARS_MAX}`);
    } else return false;
    return true;
  });
  return s;
}

/** One decision group as Coordinator.ClusterStatus names it (proto/coordinator.proto, GroupStatus). */
export interface GroupStatusRow {
  group: number;
  leaderId: string;
  leaderAddress: string;
  term: number;
  commitIndex: number;
  appliedIndex: number;
  inFlight: number;
}

/** The most groups a status lists (GROUPS_MAX in src/domain/group.ts): a longer list is not a cluster's. */
const STATUS_GROUPS_MAX = 64;

function decodeGroup(buf: Uint8Array, i: number): GroupStatusRow {
  const g: GroupStatusRow = {
    group: 0,
    leaderId: '',
    leaderAddress: '',
    term: 0,
    commitIndex: 0,
    appliedIndex: 0,
    inFlight: 0,
  };
  const r = new Reader(buf, `ClusterStatusResponse.groups[${i}]`);
  r.fields((n, wt) => {
    if (n === 1) g.group = r.varintField(wt, 'group');
    else if (n === 2) g.leaderId = r.stringField(wt, 'leader_id');
    else if (n === 3) g.leaderAddress = r.stringField(wt, 'leader_address');
    else if (n === 4) g.term = r.varintField(wt, 'term');
    else if (n === 5) g.commitIndex = r.varintField(wt, 'commit_index');
    else if (n === 6) g.appliedIndex = r.varintField(wt, 'applied_index');
    else if (n === 7) g.inFlight = r.varintField(wt, 'in_flight');
    else return false;
    return true;
  });
  return g;
}

/**
 * The decision groups of a ClusterStatusResponse's bytes (group_count, 11,
 * and groups, 12), the rest skipped: what `verdict status` shows per group.
 * A node that predates groups sends neither: one group, and no rows.
 */
export function decodeClusterGroups(buf: Uint8Array): { groupCount: number; groups: GroupStatusRow[] } {
  const out = { groupCount: 0, groups: [] as GroupStatusRow[] };
  const r = new Reader(buf, 'ClusterStatusResponse');
  r.fields((n, wt) => {
    if (n === 11) out.groupCount = r.varintField(wt, 'group_count');
    else if (n === 12) {
      r.expect(wt, LENGTH, 'groups');
      if (out.groups.length >= STATUS_GROUPS_MAX) r.fail(`more than ${STATUS_GROUPS_MAX} groups`);
      out.groups.push(decodeGroup(r.bytes('groups'), out.groups.length));
    } else return false;
    return true;
  });
  return out;
}
