// The one line a missing optional peer (pg, mysql2, nats, level, pino,
// prom-client) becomes: which failures name a missing package, and what the
// line says.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { absentPackages, loadWith, missingPackage, missingPackagesMessage } from '../../src/util/optional-package.ts';

class Refusal extends Error {}

/** What Node throws for an import of a package that is not installed. */
async function importFailure(spec: string): Promise<unknown> {
  try {
    await import(/* @vite-ignore */ spec);
  } catch (err) {
    return err;
  }
  throw new Error(`${spec} imported`);
}

describe('optional packages', () => {
  it('reads the package out of an import or a require of one that is not installed, subpaths and scopes included', async () => {
    expect(
      missingPackage(
        Object.assign(
          new Error("Cannot find package 'pg' imported from /app/node_modules/verdict/dist/participant/postgres.js"),
          { code: 'ERR_MODULE_NOT_FOUND' },
        ),
      ),
    ).toBe('pg');
    expect(
      missingPackage(
        Object.assign(new Error("Cannot find module 'mysql2/promise'\nRequire stack:\n- /app/x.cjs"), {
          code: 'MODULE_NOT_FOUND',
        }),
      ),
    ).toBe('mysql2');
    expect(
      missingPackage(
        Object.assign(new Error("Cannot find package '@scope/name' imported from /x.js"), {
          code: 'ERR_MODULE_NOT_FOUND',
        }),
      ),
    ).toBe('@scope/name');
    let required: unknown;
    try {
      createRequire(import.meta.url)('verdict-absent-package/sub');
    } catch (err) {
      required = err;
    }
    expect(missingPackage(required)).toBe('verdict-absent-package');
    // A missing file of the package itself (a broken install) is not a missing package; nor is any other error.
    expect(
      missingPackage(
        Object.assign(new Error("Cannot find module '/app/dist/x.js' imported from /app/dist/y.js"), {
          code: 'ERR_MODULE_NOT_FOUND',
        }),
      ),
    ).toBeNull();
    expect(missingPackage(new Error("Cannot find package 'pg'"))).toBeNull();
    expect(missingPackage(null)).toBeNull();
    // What this Node says, whatever the runner makes of it, names the package.
    expect(missingPackage(await importFailure('verdict-absent-package'))).toBe('verdict-absent-package');
  });

  it('says in one line what needs which packages and the command that installs them', () => {
    expect(missingPackagesMessage('the PostgreSQL resource', ['pg'])).toBe(
      'the PostgreSQL resource needs the pg package, which is not installed: run `npm install pg` in your project',
    );
    expect(missingPackagesMessage('`verdict node`', ['level', 'pino', 'prom-client'])).toBe(
      '`verdict node` needs the level, pino and prom-client packages, which are not installed: run `npm install level pino prom-client` in your project',
    );
  });

  it('turns the absence of a package it was told about into the refusal, and passes every other failure on', async () => {
    const absent: string = 'verdict-absent-package';
    const load = () => import(/* @vite-ignore */ absent);
    await expect(loadWith('the thing', ['verdict-absent-package'], load, (m) => new Refusal(m))).rejects.toThrow(
      new Refusal(
        'the thing needs the verdict-absent-package package, which is not installed: run `npm install verdict-absent-package` in your project',
      ),
    );
    // A package it was not told about is a broken install, not an optional peer: Node's error as it is.
    await expect(loadWith('the thing', ['pg'], load, (m) => new Refusal(m))).rejects.not.toBeInstanceOf(Refusal);
    const other = new Error('syntax error in the driver');
    await expect(
      loadWith(
        'the thing',
        ['pg'],
        () => Promise.reject(other),
        (m) => new Refusal(m),
      ),
    ).rejects.toBe(other);
    await expect(
      loadWith(
        'the thing',
        ['pg'],
        () => Promise.resolve(7),
        (m) => new Refusal(m),
      ),
    ).resolves.toBe(7);
  });

  it('lists the packages that cannot be imported, in the order asked', async () => {
    expect(await absentPackages(['verdict-absent-a', 'pino', 'verdict-absent-b'])).toEqual([
      'verdict-absent-a',
      'verdict-absent-b',
    ]);
  });
});
