// Where the .proto files are: proto/ at the package root, found from this
// module's own location (src/transport/ in a checkout, dist/transport/ in an
// installed package, both two levels below the root), never from the
// working directory, so the CLI and the SDKs work from any directory. And
// the one way a proto's module takes a service out of its loaded package.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import { assert } from '../util/assert.ts';

/** proto/ is not where this module expects it: a broken install or checkout. */
export class ProtoMissingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtoMissingError';
  }
}

/** The absolute path of proto/<name>; refuses, naming the path looked for, when it is missing. */
export function protoFile(name: string): string {
  const path = fileURLToPath(new URL(`../../proto/${name}`, import.meta.url));
  if (!existsSync(path)) {
    throw new ProtoMissingError(
      `proto file ${name} not found at ${path}: Verdict's proto/ folder ships with the package and is looked for two levels above ${fileURLToPath(new URL('.', import.meta.url))}; the install is incomplete, reinstall verdict`,
    );
  }
  return path;
}

/**
 * Service `name` of a loaded proto, checked to define every method the code
 * serves or calls. The cast narrows proto-loader's `object` message types to
 * the generated wire shapes, which the proto's load options make true.
 */
export function protoService<Handlers>(
  pkg: protoLoader.PackageDefinition,
  path: string,
  name: string,
  methods: readonly string[],
): grpc.ServiceDefinition<Handlers> {
  const def = pkg[name];
  // Message and enum definitions carry a `format`; services are plain maps of methods.
  assert(def !== undefined && !('format' in def), `${name} is a service in ${path}`);
  const svc = def as protoLoader.ServiceDefinition;
  for (const m of methods) assert(svc[m] !== undefined, `${name}.${m} is defined in ${path}`);
  return svc as unknown as grpc.ServiceDefinition<Handlers>;
}
