// Every file of proto/ must compile with protoc, the compiler every language
// but JavaScript generates its stubs with: protobufjs accepts files protoc
// refuses (a message named like a method of its service), so the TypeScript
// build alone cannot tell. Each file is compiled on its own into a temporary
// folder with the Python and gRPC Python generators (the stubs sdk/python
// ships); a failure names the file and carries protoc's message.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const PROTOC = '/usr/bin/protoc';
const GRPC_PYTHON_PLUGIN = '/usr/bin/grpc_python_plugin';
const PROTOS = readdirSync(join(ROOT, 'proto'))
  .filter((f) => f.endsWith('.proto'))
  .sort();

describe('proto/ compiles with protoc (Debian protobuf-compiler)', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'verdict-protoc-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('finds the four protos', () => {
    expect(PROTOS).toEqual(['coordinator.proto', 'participant.proto', 'raft.proto', 'saga.proto']);
  });

  it.each(PROTOS)('proto/%s compiles for Python and gRPC Python', (file) => {
    const out = mkdtempSync(join(tmp, `${file}-`));
    const r = spawnSync(
      PROTOC,
      [
        '-Iproto',
        `--python_out=${out}`,
        `--grpc_out=${out}`,
        `--plugin=protoc-gen-grpc=${GRPC_PYTHON_PLUGIN}`,
        `proto/${file}`,
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    const said = `${r.error?.message ?? ''}${r.stdout}${r.stderr}`.trim();
    expect({ file, status: r.status, said }).toEqual({ file, status: 0, said: '' });
    const stem = file.slice(0, -'.proto'.length);
    expect(readdirSync(out).sort()).toEqual([`${stem}_pb2.py`, `${stem}_pb2_grpc.py`]);
  });
});
