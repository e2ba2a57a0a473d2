// Where the .proto files are: proto/ at the package root, found from this
// module's own location (src/transport/ in a checkout, dist/transport/ in an
// installed package, both two levels below the root), never from the
// working directory, so the CLI and the SDKs work from any directory.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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
