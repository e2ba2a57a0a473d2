// Verdict's database drivers and its server-side packages (pg, mysql2, nats,
// level, pino, prom-client) are optional peer dependencies: an application
// installs the ones it uses, and a client or a memory participant installs
// none of them. Each is imported where it is first needed; when it is not
// installed, the import's failure becomes one line that names the package and
// the command that installs it.

/** The names of packages whose absence failed `err` (an import or require), or null when `err` is something else. */
export function missingPackage(err: unknown): string | null {
  const e = err as NodeJS.ErrnoException | null;
  if (e === null || typeof e !== 'object' || (e.code !== 'ERR_MODULE_NOT_FOUND' && e.code !== 'MODULE_NOT_FOUND'))
    return null;
  // "Cannot find package 'pg' imported from …" (import) or "Cannot find module 'mysql2/promise'" (require).
  const m = /Cannot find (?:package|module) '([^'./][^']*)'/.exec(String(e.message));
  if (m === null) return null;
  const spec = m[1]!;
  return spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
}

/** "verdict node needs level and pino, which are not installed: run `npm install level pino` in your project". */
export function missingPackagesMessage(needs: string, packages: readonly string[]): string {
  const names = packages.length === 1 ? packages[0]! : `${packages.slice(0, -1).join(', ')} and ${packages.at(-1)!}`;
  const are = packages.length === 1 ? 'is' : 'are';
  return `${needs} needs the ${names} package${packages.length === 1 ? '' : 's'}, which ${are} not installed: run \`npm install ${packages.join(' ')}\` in your project`;
}

/**
 * Runs `load` (a dynamic import); when it fails because one of `packages` is
 * not installed, throws `refuse(message)` with the one line of
 * missingPackagesMessage instead. Any other failure is rethrown as it is.
 */
export async function loadWith<T>(
  needs: string,
  packages: readonly string[],
  load: () => Promise<T>,
  refuse: (message: string) => Error,
): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const missing = missingPackage(err);
    if (missing !== null && packages.includes(missing)) throw refuse(missingPackagesMessage(needs, [missing]));
    throw err;
  }
}

/** The ones of `packages` that cannot be imported from here, each tried once. */
export async function absentPackages(packages: readonly string[]): Promise<string[]> {
  const absent: string[] = [];
  for (const p of packages) {
    try {
      await import(p);
    } catch (err) {
      if (missingPackage(err) === p) absent.push(p);
      else throw err;
    }
  }
  return absent;
}
