// `npm run gen:proto`: the TypeScript wire types of proto/*.proto, written
// by proto-loader-gen-types (from @grpc/proto-loader, already a dependency)
// into src/transport/gen/<proto>/, which is checked in. Run it after editing
// a .proto; test/unit/gen-proto.test.ts fails, naming the stale file, while
// the checked-in types differ from what this script writes.
//
// Each proto is generated with the options the code loads it with at run
// time (the same test compares them), or the types would lie: raft.proto
// carries enums as numbers, the others as their names.
//
// `node scripts/gen-proto.mjs <dir>` writes into <dir> instead (the test's
// temporary folder).
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const GEN_DIR = join(ROOT, 'src', 'transport', 'gen');

/** What each proto is loaded with at run time, in proto-loader's option names. */
export const PROTO_OPTIONS = {
  raft: { keepCase: false, longs: 'Number', enums: 'Number', defaults: true, oneofs: true },
  coordinator: { keepCase: false, longs: 'Number', enums: 'String', defaults: true, oneofs: true },
  participant: { keepCase: false, longs: 'Number', enums: 'String', defaults: true, oneofs: true },
  saga: { keepCase: false, longs: 'Number', enums: 'String', defaults: true, oneofs: true },
};

function generatorArgs(o) {
  const args = [`--longs=${o.longs}`, '--grpcLib=@grpc/grpc-js', '--importFileExtension=.ts'];
  if (o.keepCase) args.push('--keepCase');
  // The generator's default for enums is numbers; it takes only `String` as a value.
  if (o.enums === 'String') args.push('--enums=String');
  if (o.defaults) args.push('--defaults');
  if (o.oneofs) args.push('--oneofs');
  return args;
}

/** Writes every proto's types into outDir/<proto>/; throws, with the generator's output, when it fails. */
export function generate(outDir) {
  const bin = createRequire(join(ROOT, 'package.json')).resolve(
    '@grpc/proto-loader/build/bin/proto-loader-gen-types.js',
  );
  const protos = readdirSync(join(ROOT, 'proto'))
    .filter((f) => f.endsWith('.proto'))
    .map((f) => f.slice(0, -'.proto'.length))
    .sort();
  for (const name of protos) {
    const o = PROTO_OPTIONS[name];
    if (o === undefined)
      throw new Error(
        `gen-proto: proto/${name}.proto has no entry in PROTO_OPTIONS (scripts/gen-proto.mjs): add the options the code loads it with`,
      );
    const dir = join(outDir, name);
    rmSync(dir, { recursive: true, force: true });
    // Run from the root with a relative path: each file's "Original file:" line is then the same on every machine.
    const r = spawnSync(process.execPath, [bin, ...generatorArgs(o), '-O', dir, `proto/${name}.proto`], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    if (r.status !== 0)
      throw new Error(`gen-proto: proto-loader-gen-types failed on proto/${name}.proto:\n${r.stdout}${r.stderr}`);
  }
  return protos;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = process.argv[2] !== undefined ? resolve(process.argv[2]) : GEN_DIR;
  const protos = generate(outDir);
  console.error(`gen-proto: ${protos.map((p) => `proto/${p}.proto`).join(', ')} → ${outDir}`);
}
