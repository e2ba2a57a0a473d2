// The generated wire types (src/transport/gen/) against the protos they come
// from: regenerated into a temporary folder, they must be exactly what is
// checked in (else a .proto changed without `npm run gen:proto`), and the
// generator's options must be the ones the code loads each proto with at run
// time (else the types describe values proto-loader never produces).
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type * as protoLoader from '@grpc/proto-loader';
import { afterAll, describe, expect, it } from 'vitest';
import { GEN_DIR, generate, PROTO_OPTIONS, type ProtoOptions } from '../../scripts/gen-proto.mjs';
import { COORDINATOR_LOAD_OPTIONS } from '../../src/transport/coordinator-rpc.ts';
import { PARTICIPANT_LOAD_OPTIONS } from '../../src/transport/participant-rpc.ts';
import { LOAD_OPTIONS } from '../../src/transport/proto.ts';
import { SAGA_LOAD_OPTIONS } from '../../src/transport/saga-rpc.ts';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/** Differences between the checked-in folder and a fresh generation, one line each, naming the file. */
function drift(checkedIn: string, fresh: string): string[] {
  const have = filesUnder(checkedIn);
  const want = filesUnder(fresh);
  const out: string[] = [];
  for (const f of want) if (!have.includes(f)) out.push(`src/transport/gen/${f} is missing`);
  for (const f of have)
    if (!want.includes(f)) out.push(`src/transport/gen/${f} is left over (its message or proto is gone)`);
  for (const f of want)
    if (have.includes(f) && readFileSync(join(checkedIn, f), 'utf8') !== readFileSync(join(fresh, f), 'utf8'))
      out.push(`src/transport/gen/${f} is stale`);
  return out;
}

/** The run-time options in the generator's spelling. */
function spelled(o: protoLoader.Options): ProtoOptions {
  const name = (v: unknown): 'Number' | 'String' => {
    if (v === Number) return 'Number';
    if (v === String) return 'String';
    throw new Error(`unexpected option value ${String(v)}`);
  };
  return {
    keepCase: o.keepCase === true,
    longs: name(o.longs),
    enums: name(o.enums),
    defaults: o.defaults === true,
    oneofs: o.oneofs === true,
  };
}

describe('generated wire types (npm run gen:proto)', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'verdict-gen-proto-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('are generated with the options each proto is loaded with at run time', () => {
    expect(PROTO_OPTIONS).toEqual({
      raft: spelled(LOAD_OPTIONS),
      coordinator: spelled(COORDINATOR_LOAD_OPTIONS),
      participant: spelled(PARTICIPANT_LOAD_OPTIONS),
      saga: spelled(SAGA_LOAD_OPTIONS),
    });
  });

  it('are what the generator writes from proto/ today', () => {
    expect(generate(tmp)).toEqual(['coordinator', 'participant', 'raft', 'saga']);
    const problems = drift(GEN_DIR, tmp);
    expect(problems, `${problems.join('\n')}\nrun \`npm run gen:proto\` and commit src/transport/gen/`).toEqual([]);
  });

  it('report a changed, a missing and a left-over file by name', () => {
    const a = mkdtempSync(join(tmpdir(), 'verdict-gen-a-'));
    try {
      cpSync(GEN_DIR, a, { recursive: true });
      expect(drift(a, GEN_DIR)).toEqual([]);
      const msg = join('raft', 'verdict', 'raft', 'Message.ts');
      const text = readFileSync(join(a, msg), 'utf8');
      rmSync(join(a, msg));
      expect(drift(a, GEN_DIR)).toEqual([`src/transport/gen/${msg} is missing`]);
      writeFileSync(join(a, msg), text.replace("'reject'", "'rejected'"));
      writeFileSync(join(a, 'raft', 'Old.ts'), '');
      expect(drift(a, GEN_DIR)).toEqual([
        `src/transport/gen/${join('raft', 'Old.ts')} is left over (its message or proto is gone)`,
        `src/transport/gen/${msg} is stale`,
      ]);
    } finally {
      rmSync(a, { recursive: true, force: true });
    }
  });
});
