// docs/tls.md's recipe, end to end on real processes: `verdict certs` makes
// the CA and every certificate, `verdict cluster up --tls` runs three nodes on
// them, two participants serve TLS with their own certificates and a client
// commits through them. A participant given a client-only certificate is
// refused at start with the fix (it would otherwise register and then abort
// every transaction with "unsuitable certificate purpose"); an admin
// operation (participant remove) needs the admin certificate.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tlsCredentials } from '../../src/client/tls.ts';
import { BIN, freePorts, ROOT, runCli, sleep, tempDir, useProcessCleanup, waitFor } from './harness.ts';
import { freeBase, launch, nodesUp, STOP_WAIT_MS, useLauncherCleanup } from './launcher-helpers.ts';

useProcessCleanup();
useLauncherCleanup();

const WAIT_MS = 60_000;
const participants: ChildProcess[] = [];
afterEach(() => {
  for (const p of participants.splice(0)) p.kill('SIGKILL');
});

describe('the TLS recipe of docs/tls.md', () => {
  it('certs + cluster up --tls + TLS participants commit; a client-only participant certificate is refused at start; participant remove needs the admin certificate', async () => {
    const base = await freeBase();
    const [shopPort, ledgerPort, badPort] = await freePorts(3);
    const certs = tempDir('verdict-recipe-certs-');
    const made = await runCli(
      [
        'certs',
        '--dir',
        certs,
        '--base-port',
        String(base),
        '--participant',
        `shop=127.0.0.1:${shopPort}`,
        '--participant',
        `ledger=127.0.0.1:${ledgerPort}`,
        '--admin',
        'ops-admin',
        '--client',
        'alice',
      ],
      { timeoutMs: WAIT_MS },
    );
    expect(made.code, made.stderr).toBe(0);
    const ca = join(certs, 'ca.crt');
    const tls = (name: string): string[] => [
      '--ca',
      ca,
      '--cert',
      join(certs, `${name}.crt`),
      '--key',
      join(certs, `${name}.key`),
    ];
    const endpoints = [0, 1, 2].map((k) => `127.0.0.1:${base + k}`).join(',');

    const l = launch(base, tempDir(), ['--tls', certs]);
    await nodesUp(l, tlsCredentials({ ca, cert: join(certs, 'alice.crt'), key: join(certs, 'alice.key') }));

    const data = tempDir('verdict-recipe-data-');
    for (const [id, port] of [
      ['shop', shopPort],
      ['ledger', ledgerPort],
    ] as const) {
      participants.push(
        spawn(
          process.execPath,
          [
            BIN,
            'participant',
            '--id',
            id,
            '--listen',
            `127.0.0.1:${port}`,
            '--data',
            join(data, id),
            '--endpoints',
            endpoints,
            ...tls(id),
          ],
          { cwd: ROOT, stdio: 'ignore' },
        ),
      );
    }

    // alice's certificate is client-only: as a participant's it is refused before anything starts.
    const bad = await runCli(
      [
        'participant',
        '--id',
        'bad',
        '--listen',
        `127.0.0.1:${badPort}`,
        '--data',
        join(data, 'bad'),
        '--endpoints',
        endpoints,
        ...tls('alice'),
      ],
      { timeoutMs: WAIT_MS },
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /^verdict: --cert \(.*alice\.crt\) lacks serverAuth in its extendedKeyUsage: .*"unsuitable certificate purpose"\); make one with: npx verdict certs --participant bad=127\.0\.0\.1:\d+/,
    );

    const asAlice = ['--endpoints', endpoints, ...tls('alice')];
    await waitFor('both participants to register over TLS', WAIT_MS, async () => {
      const r = await runCli(['participants', '--json', ...asAlice], { timeoutMs: WAIT_MS });
      const ids =
        r.code === 0 ? (JSON.parse(r.stdout) as { participantId: string }[]).map((p) => p.participantId).sort() : [];
      return ids.join(',') === 'ledger,shop' ? true : undefined;
    });
    const commit = await runCli(
      [
        'txn',
        'commit',
        '--participant',
        'shop={"set":{"sku-1":"4"}}',
        '--participant',
        'ledger={"set":{"acct-9":"-20"}}',
        ...asAlice,
      ],
      { timeoutMs: WAIT_MS },
    );
    expect([commit.code, commit.stderr]).toEqual([0, '']);
    expect(commit.stdout).toMatch(/^COMMITTED /);

    // Admin operations take the admin certificate (ops-admin is in tls.adminNames of the generated configs).
    await sleep(500);
    const denied = await runCli(['participant', 'remove', 'ledger', ...asAlice], { timeoutMs: WAIT_MS });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(
      /PERMISSION_DENIED: participant remove needs an admin certificate: client certificate CN=alice/,
    );
    const allowed = await waitFor('ledger to be removable (its ACK delivered)', WAIT_MS, async () => {
      const r = await runCli(['participant', 'remove', 'ledger', '--endpoints', endpoints, ...tls('ops-admin')], {
        timeoutMs: WAIT_MS,
      });
      return r.code === 0 ? r : undefined;
    });
    expect(allowed.stdout).toBe('removed participant ledger\n');

    l.child.kill('SIGTERM');
    const exit = await Promise.race([l.exited, sleep(STOP_WAIT_MS).then(() => null)]);
    expect(exit, l.output().slice(-3_000)).toEqual({ code: 0, signal: null });
  }, 300_000);
});
