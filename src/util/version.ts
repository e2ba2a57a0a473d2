// The package's version, from its package.json: two folders up from this
// file both in src/util/ and in the compiled dist/util/. One reader for the
// CLI's --version and the node's verdict_build_info.
import { readFileSync } from 'node:fs';

let cached: string | null = null;

/** The version field of Verdict's package.json ("unknown" when it has none). */
export function packageVersion(): string {
  if (cached === null) {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    cached = typeof pkg.version === 'string' ? pkg.version : 'unknown';
  }
  return cached;
}
