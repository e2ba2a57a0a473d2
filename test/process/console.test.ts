// The web console in a real browser: Debian's chromium, driven by
// playwright-core, against a real three-node cluster with two participants.
// The pages render the live state, a committed transaction's timeline shows
// its PREPAREs, VOTEs, decision (with its log index) and ACKs and is found by
// the history search, a TCC participant's reserve is listed while the
// transaction waits, a follower's
// cluster page shows the new leader within seconds of a SIGKILL of the old
// one, and bad input gets a clear message. A one-node TLS cluster serves the
// console over HTTPS with client certificates in the browser: a non-admin's
// resolve is refused on screen, an admin's goes through, and plain HTTP
// refuses actions and says why.
// Screenshots land in a temporary folder, or where VERDICT_SCREENSHOTS says
// (VERDICT_SCREENSHOTS=docs/img refreshes the ones the README shows), so a
// test run leaves the working tree as it was.

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tlsCredentials } from '../../src/client/tls.ts';
import { VerdictClient } from '../../src/client/client.ts';
import { certDir, TestCa } from '../tls-certs.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import {
  BIN,
  Cluster,
  fileTempDir,
  freePorts,
  ROOT,
  uniqueClusterId,
  useProcessCleanup,
  waitFor,
  type NodeProc,
} from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';
import pino from 'pino';
import { CoordinatorConnection } from '../../src/client/connection.ts';
import { LeaseKeeper } from '../../src/outbox/lease-keeper.ts';
import { startStepService, type StepService } from '../../src/saga/step-service.ts';
import { startParticipant } from '../../src/participant/runtime.ts';
import type { TccMemoryHandlers } from '../../src/participant/tcc/memory.ts';

useProcessCleanup();

const CHROMIUM = process.env.VERDICT_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS_TO = process.env.VERDICT_SCREENSHOTS;
const SHOTS = SHOTS_TO ? resolve(ROOT, SHOTS_TO) : mkdtempSync(join(tmpdir(), 'verdict-console-shots-'));
/** A loaded two-core machine: generous bounds for a page to show a state. */
const SHOWS_MS = 30_000;
const FIRST_LEADER_WAIT_MS = 60_000;

let browser: Browser;
let c: Cluster;
let parts: Participants;
let client: VerdictClient;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`the browser test needs chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
    headless: true,
  });
  c = await Cluster.start({ nodes: 3, metrics: true });
  await c.waitForLeader({ timeoutMs: FIRST_LEADER_WAIT_MS });
  parts = await startParticipants(c, ['shop', 'ledger']);
  client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address), callTimeoutMs: 20_000 });
}, 180_000);

afterAll(async () => {
  client?.close();
  await parts?.stop();
  await browser?.close();
  if (!SHOTS_TO) rmSync(SHOTS, { recursive: true, force: true });
});

/**
 * Seats held by a TCC Try until the decision: Confirm sells them, Cancel frees them. A hold for a show is kept 10
 * minutes (its YES says so); any other has no TTL.
 */
const seatHandlers: TccMemoryHandlers<{ held: Record<string, string> }> = {
  initial: () => ({ held: {} }),
  try(s, b) {
    const what = new TextDecoder().decode(b.payload);
    s.held[b.txnId] = what;
    return /show/.test(what) ? { ttlMs: 600_000 } : undefined;
  },
  confirm(s, b) {
    delete s.held[b.txnId];
  },
  cancel(s, b) {
    delete s.held[b.txnId];
  },
  encode: (s) => JSON.stringify(s),
  decode: (t) => JSON.parse(t) as { held: Record<string, string> },
};

const consoleUrl = (n: NodeProc, hash: string): string => `http://${n.metricsAddress}/#${hash}`;

async function open(n: NodeProc, hash: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(consoleUrl(n, hash));
  return page;
}

describe('the web console in chromium', { timeout: 180_000 }, () => {
  it('shows the cluster, a committed transaction with its timeline, the participants, and the new leader after a SIGKILL', async () => {
    const { node: leader } = await c.waitForLeader();
    const committed = await (await client.begin({ timeoutMs: 10_000 }))
      .enlist('shop', { set: { 'sku-1': '4' } })
      .enlist('ledger', { set: { 'acct-9': '-20' } })
      .commit();
    expect(committed.outcome).toBe('COMMITTED');
    // Begun and never committed: in flight on the leader, for the transactions page.
    const open1 = await client.begin({ timeoutMs: 120_000 });

    // Cluster page on the leader: every member, this node leads.
    const page = await open(leader, 'cluster');
    await page.locator('[data-field=leader]').filter({ hasText: leader.id }).waitFor({ timeout: SHOWS_MS });
    await page.locator('[data-field=role]').filter({ hasText: 'leader' }).waitFor({ timeout: SHOWS_MS });
    for (const n of c.nodes) await page.locator(`[data-node=${n.id}]`).waitFor({ timeout: SHOWS_MS });
    // Every peer probed and up.
    await waitFor('both peers shown up', SHOWS_MS, async () =>
      (await page.locator('td .up').count()) === 3 ? true : undefined,
    );
    // Each node's version in its row (from its own status answer), and this node's in the header.
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    await page
      .locator('#whoami')
      .filter({ hasText: `Verdict ${version}` })
      .waitFor({ timeout: SHOWS_MS });
    for (const n of c.nodes)
      await page
        .locator('tr', { has: page.locator(`[data-node=${n.id}]`) })
        .filter({ hasText: version })
        .waitFor({ timeout: SHOWS_MS });
    await page.screenshot({ path: join(SHOTS, 'console-cluster.png'), fullPage: true });

    // Transactions in flight: the begun one; keyboard navigation to the search box works.
    await page.goto(consoleUrl(leader, 'transactions'));
    await page.getByRole('link', { name: open1.txnId }).waitFor({ timeout: SHOWS_MS });
    await page.getByLabel('Find a transaction by id').fill(committed.txnId);
    await page.getByLabel('Find a transaction by id').press('Enter');
    await page.waitForURL(/#txn\//, { timeout: SHOWS_MS });

    // The committed transaction's timeline: begin, a PREPARE and a VOTE per participant, the decision with its log
    // index, the ACKs.
    await page.locator('[data-field=outcome]').filter({ hasText: 'committed' }).waitFor({ timeout: SHOWS_MS });
    // The COMMIT entry's index, as the log has it. Under parallel commit (the default) the client's own
    // answer names the STAGING record's index, and the explicit COMMIT comes after it (docs/protocol.md).
    const indexField = page.locator('[data-field=decision-index]').filter({ hasText: /^\s*\d+\s*$/ });
    await indexField.waitFor({ timeout: SHOWS_MS });
    const shownIndex = Number(((await indexField.textContent()) ?? '').trim());
    expect(shownIndex).toBeGreaterThanOrEqual(committed.decisionIndex);
    expect((await client.outcome(committed.txnId)).decisionIndex).toBe(shownIndex);
    const rows = page.locator('table').filter({ hasText: 'Events node' }).locator('tbody tr');
    await waitFor('the ACKs in the timeline', SHOWS_MS, async () =>
      (await rows.allInnerTexts()).filter((r) => /\tack\t/.test(r)).length === 2 ? true : undefined,
    );
    const timeline = (await rows.allInnerTexts()).map((r) => r.split('\t').map((x) => x.trim()));
    const kinds = timeline.map((r) => `${r[1]} ${r[2]}`);
    expect(kinds[0]).toBe('begin —');
    for (const p of ['shop', 'ledger'])
      for (const k of ['prepare', 'vote', 'decision-sent', 'ack']) expect(kinds).toContain(`${k} ${p}`);
    const decided = timeline.find((r) => r[1] === 'decided');
    expect(decided?.[4]).toBe(String(shownIndex));
    expect(decided?.[3]).toMatch(/^COMMIT/);
    // Every VOTE comes after its PREPARE, the decision after every VOTE, every ACK after the decision.
    const at = (k: string): number => kinds.indexOf(k);
    for (const p of ['shop', 'ledger']) {
      expect(at(`vote ${p}`)).toBeGreaterThan(at(`prepare ${p}`));
      expect(at('decided —')).toBeGreaterThan(at(`vote ${p}`));
      expect(at(`ack ${p}`)).toBeGreaterThan(at('decided —'));
    }
    // A decided transaction offers no Resolve form, and says why.
    await page
      .locator('[data-note=resolve]')
      .filter({ hasText: 'No resolve here: this transaction is decided (committed)' })
      .waitFor({ timeout: SHOWS_MS });
    expect(await page.getByRole('button', { name: 'Resolve' }).isVisible()).toBe(false);
    // Its participants, each with its vote and ACK (from the leader while it tracked it, then from the history).
    const people = page.getByRole('table').filter({ hasText: 'Participants, ' });
    for (const p of ['shop', 'ledger'])
      await people.getByRole('row').filter({ hasText: p }).filter({ hasText: 'yes' }).waitFor({ timeout: SHOWS_MS });
    await page.screenshot({ path: join(SHOTS, 'console-transaction.png'), fullPage: true });

    // The history, searched from the page: the committed transaction is there, with its participants.
    await page.goto(consoleUrl(leader, 'history'));
    await page.getByLabel('Since (30m, 24h, 7d or an ISO time)').fill('1h');
    await page.getByLabel('Participant (optional)').fill('ledger');
    await page.getByRole('button', { name: 'Search' }).click();
    const found = page.locator(`[data-history="${committed.txnId}"]`);
    await found.waitFor({ timeout: SHOWS_MS });
    expect(await page.getByRole('row').filter({ has: found }).textContent()).toMatch(
      /transaction.*committed.*shop yes.*ledger yes/,
    );
    await page.getByLabel('Participant (optional)').fill('nobody');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('nothing in that range').waitFor({ timeout: SHOWS_MS });
    await page.getByLabel('Participant (optional)').fill('');
    await page.getByRole('button', { name: 'Search' }).click();
    await found.waitFor({ timeout: SHOWS_MS });
    await page.screenshot({ path: join(SHOTS, 'console-history.png'), fullPage: true });
    await page.goto(consoleUrl(leader, `txn/${committed.txnId}`));

    // Bad input: a resolve with no reason, an unknown transaction, API parameters out of range.
    const noReason = await page.evaluate(async (id) => {
      const r = await fetch(`/api/transactions/${id}/resolve`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ outcome: 'abort', reason: ' ' }),
      });
      return { status: r.status, body: (await r.json()) as { error: string } };
    }, open1.txnId);
    expect(noReason).toEqual({
      status: 400,
      body: { error: 'a resolve needs a reason: it is recorded in the log with who asked and when' },
    });
    await page.goto(consoleUrl(leader, 'txn/no-such-txn-42'));
    await page
      .getByRole('alert')
      .filter({ hasText: 'no transaction "no-such-txn-42" is known' })
      .waitFor({ timeout: SHOWS_MS });
    const bad = await page.evaluate(async () => {
      const r = await fetch('/api/transactions?filter=stuck&limit=abc');
      return { status: r.status, body: (await r.json()) as { error: string } };
    });
    expect(bad).toEqual({
      status: 400,
      body: { error: 'filter "stuck" is not one of in-flight, in-doubt, unacked, heuristic, all' },
    });
    const badLimit = await page.evaluate(async () => (await fetch('/api/transactions?limit=0')).json());
    expect(badLimit).toEqual({ error: 'limit "0" must be a whole number from 1 to 1000' });

    // Participants: both, with their addresses, heard from by the leader.
    await page.goto(consoleUrl(leader, 'participants'));
    for (const [id, p] of parts.runtimes)
      await page.getByRole('row').filter({ hasText: id }).filter({ hasText: p.address }).waitFor({ timeout: SHOWS_MS });
    expect(await page.getByRole('row').filter({ hasText: 'shop' }).textContent()).toMatch(/ago/);
    // Each participant's resource kind, as it said when it registered.
    expect(await page.getByRole('row').filter({ hasText: 'ledger' }).textContent()).toMatch(/memory/);
    const api = (await page.evaluate(async () => (await fetch('/api/participants')).json())) as {
      participants: { id: string; kind: string }[];
    };
    expect(api.participants.map((p) => [p.id, p.kind]).sort()).toEqual([
      ['ledger', 'memory'],
      ['shop', 'memory'],
    ]);

    // Resolving the in-flight transaction by hand from the page: ABORT, recorded with the reason.
    await page.goto(consoleUrl(leader, `txn/${open1.txnId}`));
    await page.getByLabel('Reason (recorded in the log)').fill('stuck at 3 a.m., client gone');
    await page.getByLabel('Your name (optional)').fill('ada');
    await page.getByRole('button', { name: 'Resolve' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Decided: ABORTED at log index \d+, by ada via console of/ })
      .waitFor({ timeout: SHOWS_MS });
    expect((await client.outcome(open1.txnId)).outcome).toBe('ABORTED');
    await page.close();

    // Leadership moved from the leader's page ("make leader", reached with the keyboard).
    const heir = c.nodes.find((n) => n !== leader)!;
    const lp = await open(leader, 'cluster');
    const button = lp.getByRole('button', { name: `Transfer leadership to ${heir.id}` });
    await button.focus();
    await button.press('Enter');
    await lp
      .getByRole('status')
      .filter({ hasText: `${heir.id} leads now` })
      .waitFor({ timeout: SHOWS_MS });
    await lp.close();
    const { node: current } = await c.waitForLeader({ notId: leader.id });
    expect(current.id).toBe(heir.id);

    // A follower's cluster page: leader-only figures are "on the leader", linked to the leader's console; no action is
    // offered.
    const follower = c.nodes.find((n) => n !== current)!;
    const watch = await open(follower, 'cluster');
    await watch.locator('[data-field=leader]').filter({ hasText: current.id }).waitFor({ timeout: SHOWS_MS });
    for (const field of ['in-flight', 'unacked']) {
      const link = watch.locator(`[data-field=${field}] a[data-leader-link=${current.id}]`);
      await link.waitFor({ timeout: SHOWS_MS });
      expect(await link.textContent()).toBe('on the leader');
      expect(await link.getAttribute('href')).toBe(`http://${current.metricsAddress}/#cluster`);
    }
    await watch.locator('[data-note=follower]').filter({ hasText: 'is a follower' }).waitFor({ timeout: SHOWS_MS });
    expect(await watch.getByRole('button', { name: /Transfer leadership/ }).count()).toBe(0);
    await watch.screenshot({ path: join(SHOTS, 'console-follower.png'), fullPage: true });
    // The follower's page of a transaction in flight on the leader: no Resolve form, a link to it on the leader.
    const pending = await client.begin({ timeoutMs: 120_000 });
    const ft = await open(follower, `txn/${pending.txnId}`);
    await ft.locator(`[data-note=resolve] a[data-leader-link=${current.id}]`).waitFor({ timeout: SHOWS_MS });
    expect(await ft.locator('[data-note=resolve] a').getAttribute('href')).toBe(
      `http://${current.metricsAddress}/#txn/${pending.txnId}`,
    );
    expect(await ft.getByRole('button', { name: 'Resolve' }).isVisible()).toBe(false);
    await ft.close();

    await current.kill('SIGKILL');
    const { node: next } = await c.waitForLeader({ notId: current.id });
    await watch.locator('[data-field=leader]').filter({ hasText: next.id }).waitFor({ timeout: SHOWS_MS });
    await watch.getByRole('row').filter({ hasText: current.id }).locator('.down').waitFor({ timeout: SHOWS_MS });
    const changes = await watch
      .locator('table')
      .filter({ hasText: 'Leaders node' })
      .locator('tbody tr')
      .allInnerTexts();
    expect(changes[0]).toMatch(new RegExp(`\\b${next.id}$`));
    await watch.close();

    // The new leader's page offers no "make leader" to the node that is down, and says why.
    const np = await open(next, 'cluster');
    await np
      .locator(`[data-no-action=${current.id}]`)
      .filter({ hasText: `${current.id} is down` })
      .waitFor({ timeout: SHOWS_MS });
    expect(await np.getByRole('button', { name: `Transfer leadership to ${current.id}` }).count()).toBe(0);
    await np.screenshot({ path: join(SHOTS, 'console-node-down.png'), fullPage: true });
    await np.close();
  });

  it('shows a frozen participant silent with its age, and a retried DECISION as one row with a count and the error as a sentence', async () => {
    const { node: leader } = await c.waitForLeader();
    // A participant process that registers, then is frozen (SIGSTOP): its TCP connection stays, it answers nothing.
    const frozen: ChildProcess = spawn(
      process.execPath,
      [
        BIN,
        'participant',
        '--id',
        'frozen',
        '--listen',
        '127.0.0.1:0',
        '--data',
        fileTempDir('verdict-console-frozen-'),
        '--cluster-id',
        c.clusterId,
        '--endpoints',
        c.nodes
          .filter((n) => n.running)
          .map((n) => n.address)
          .join(','),
        '--log-level',
        'info',
        '--insecure',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    // A TCC participant: its Try reserves what it is enlisted with, until the decision.
    const seats = await startParticipant({
      clusterId: c.clusterId,
      participantId: 'seats',
      listen: '127.0.0.1:0',
      endpointsOfCluster: c.nodes.filter((n) => n.running).map((n) => n.address),
      dataDir: fileTempDir('verdict-console-seats-'),
      logger: pino({ level: 'silent' }),
      insecure: true,
      registerRetryMs: 50,
      tcc: { memory: seatHandlers as TccMemoryHandlers<unknown> },
    });
    await seats.registered;
    const ledger = parts.runtimes.get('ledger')!;
    const commitOf = ledger.resource.commit.bind(ledger.resource);
    try {
      let out = '';
      for (const stream of [frozen.stdout, frozen.stderr])
        stream?.setEncoding('utf8').on('data', (d: string) => (out += d));
      await waitFor(
        'the frozen participant registered',
        SHOWS_MS,
        async () => (/registered with the cluster/.test(out) ? true : undefined),
        () => out.slice(-2_000),
      );
      frozen.kill('SIGSTOP');
      // Asked to PREPARE, it never answers: the leader aborts at its call deadline; the pages show the silence, and the
      // TCC reserve held meanwhile, before that.
      const tx = await client.begin({ timeoutMs: 120_000 });
      const stuck = tx
        .enlist('frozen', { set: { k: 'v' } })
        .enlist('shop', { set: { 'sku-2': '1' } })
        .enlist('seats', new TextEncoder().encode('2 seats, show 7'))
        .commit()
        .catch((err: Error) => err);
      // A second reserve, whose Try gave no TTL: its expiry is unknown to the cluster.
      const tx2 = await client.begin({ timeoutMs: 120_000 });
      const stuck2 = tx2
        .enlist('frozen', { set: { k: 'w' } })
        .enlist('seats', new TextEncoder().encode('1 parking space'))
        .commit()
        .catch((err: Error) => err);
      const tccPage = await open(leader, 'tcc');
      const reserve = tccPage.getByRole('row').filter({ has: tccPage.locator(`[data-reserve="seats/${tx.txnId}"]`) });
      const reserve2 = tccPage.getByRole('row').filter({ has: tccPage.locator(`[data-reserve="seats/${tx2.txnId}"]`) });
      await reserve.waitFor({ timeout: SHOWS_MS });
      await reserve2.waitFor({ timeout: SHOWS_MS });
      // The Try's 10-minute TTL, carried by the YES: the reserve expires in 9 min (and seconds) at a time of day.
      expect(await reserve.textContent()).toMatch(
        /^seats.*2 seats, show 7.*voted YES, awaiting the decision.*aborted in .* if still undecidedin (9|10) min \(at [\d:.]+\)$/,
      );
      expect(await reserve.locator('[data-expires]').getAttribute('data-expires')).toBe('in');
      expect(await reserve2.locator('[data-expires]').textContent()).toBe('unknown');
      expect(await tccPage.locator('[data-held=seats]').textContent()).toBe('2');
      const api = (await (await fetch(`http://${leader.metricsAddress}/api/tcc`)).json()) as {
        reserves: { txnId: string; reserveExpiresAtMs: number | null; reserveExpiresInMs: number | null }[];
      };
      const mine = api.reserves.find((x) => x.txnId === tx.txnId);
      expect(mine?.reserveExpiresInMs).toBeGreaterThan(500_000);
      expect(mine?.reserveExpiresInMs).toBeLessThanOrEqual(600_000);
      expect(api.reserves.find((x) => x.txnId === tx2.txnId)).toMatchObject({
        reserveExpiresAtMs: null,
        reserveExpiresInMs: null,
      });
      await tccPage.screenshot({ path: join(SHOTS, 'console-tcc.png'), fullPage: true });
      await tccPage.close();
      const page = await open(leader, 'participants');
      const silent = page.getByRole('row').filter({ hasText: 'frozen' }).locator('[data-state=silent]');
      await silent.waitFor({ timeout: SHOWS_MS });
      expect(await silent.textContent()).toMatch(/^silent for \d+ s \(asked at [\d:.]+, no answer since\)$/);
      // The others answered everything: connected, not silent.
      for (const id of ['shop', 'ledger'])
        expect(
          await page.getByRole('row').filter({ hasText: id }).locator('[data-state]').getAttribute('data-state'),
        ).not.toBe('silent');
      await page.screenshot({ path: join(SHOTS, 'console-participants.png'), fullPage: true });
      await stuck;
      await stuck2;

      // ledger fails to apply COMMIT for a while: the leader resends the DECISION; the page shows one row per kind with
      // the count.
      let failing = true;
      ledger.resource.commit = (txnId, cb) =>
        failing ? cb(new Error('the ledger disk is full')) : commitOf(txnId, cb);
      const t = await (await client.begin({ timeoutMs: 10_000 }))
        .enlist('shop', { set: { 'sku-3': '1' } })
        .enlist('ledger', { set: { 'acct-1': '5' } })
        .commit();
      expect(t.outcome).toBe('COMMITTED');
      await page.goto(consoleUrl(leader, `txn/${t.txnId}`));
      const rows = page.locator('table').filter({ hasText: 'Events node' }).locator('tbody tr');
      const noAck = rows.filter({ hasText: 'no-ack' }).filter({ hasText: 'ledger' });
      await waitFor('three failed DECISIONs to ledger', SHOWS_MS, async () =>
        Number(
          (await noAck
            .locator('[data-repeat]')
            .getAttribute('data-repeat')
            .catch(() => '0')) ?? 0,
        ) >= 3
          ? true
          : undefined,
      );
      failing = false;
      await waitFor('the ACK of ledger', SHOWS_MS, async () =>
        (await rows.allInnerTexts()).some((r) => /\tack\tledger\t/.test(r)) ? true : undefined,
      );
      expect(await noAck.count()).toBe(1);
      expect(await rows.filter({ hasText: 'decision-sent' }).filter({ hasText: 'ledger' }).count()).toBe(1);
      // The error as a sentence led by its gRPC code, the participant's words kept; no raw "13 INTERNAL:" text.
      const detail = (await noAck.locator('td').nth(3).textContent()) ?? '';
      expect(detail).toMatch(/^[A-Z_]+: .*ledger disk is full/);
      expect(detail).not.toMatch(/^\d+ /);
      await page.screenshot({ path: join(SHOTS, 'console-retries.png'), fullPage: true });
      await page.close();
    } finally {
      ledger.resource.commit = commitOf;
      frozen.kill('SIGKILL');
      await seats.stop();
    }
  });

  it('pages for sagas (a stuck one retried and resolved from the page), outbox relays with their leases, and charts of the last minutes', async () => {
    const t = await Cluster.start({
      nodes: 1,
      metrics: true,
      configExtra: () => ({
        sagaStuckAfterAttempts: 2,
        sagaRetryMinMs: 300,
        sagaRetryMaxMs: 300,
        sagaActionAbandonAfterMs: 0,
      }),
    });
    const { node } = await t.waitForLeader({ timeoutMs: FIRST_LEADER_WAIT_MS });
    const [port] = await freePorts(1);
    let services: StepService | null = null;
    const tParts = await startParticipants(t, ['cart']);
    const conn = new CoordinatorConnection([node.address], { callTimeoutMs: 20_000, insecure: true });
    const tClient = new VerdictClient({ insecure: true, endpoints: [node.address], callTimeoutMs: 20_000 });
    const relay = new LeaseKeeper({ conn, prefix: 'outbox/orders', partitions: 4, holder: 'relay-a', ttlMs: 60_000 });
    try {
      services = await startStepService({
        clusterId: t.clusterId,
        serviceId: 'pay',
        listen: `127.0.0.1:${port}`,
        endpointsOfCluster: [node.address],
        dataDir: join(fileTempDir('verdict-console-saga-'), 'pay'),
        logger: pino({ level: 'silent' }),
        insecure: true,
        registerRetryMs: 200,
        handlers: {
          debit: {
            action: () => ({ status: 'done', output: 'debited', effect: 'debit' }),
            compensate: () => {
              throw new Error('refund system unreachable');
            },
          },
          ship: {
            action: () => ({ status: 'failed', reason: 'out of stock' }),
            compensate: () => ({ status: 'done', output: '', effect: '' }),
          },
        },
      });
      await services.registered;
      await tClient.saga({
        id: 'refund-7731',
        type: 'order-refund',
        labels: { order: 'ORD-7731' },
        steps: [
          { service: 'pay', name: 'debit' },
          { service: 'pay', name: 'ship' },
        ],
      });

      // The sagas page: the stuck one, with its call and last error.
      const page = await open(node, 'sagas');
      await page.getByLabel('Show').selectOption('stuck');
      const stuckCell = page.locator('[data-stuck="refund-7731"]');
      await stuckCell.waitFor({ timeout: SHOWS_MS });
      expect(await stuckCell.textContent()).toMatch(/^stuck on step 0 compensate after \d+ attempts$/);
      expect(await page.getByRole('row').filter({ hasText: 'refund-7731' }).textContent()).toMatch(
        /refund system unreachable/,
      );
      await page.screenshot({ path: join(SHOTS, 'console-sagas.png'), fullPage: true });

      // One saga: its steps with attempts and last error, its timeline; retry, then resolve by hand, each with a
      // reason.
      await page.getByRole('link', { name: 'refund-7731' }).click();
      await page.locator('[data-step-status="1"]').filter({ hasText: 'failed' }).waitFor({ timeout: SHOWS_MS });
      await page.locator('[data-step-status="0"]').filter({ hasText: 'compensating' }).waitFor({ timeout: SHOWS_MS });
      const step0 = page.locator('table').filter({ hasText: 'failed attempts' }).locator('tbody tr').first();
      expect(await step0.textContent()).toMatch(/refund system unreachable/);
      await page.getByRole('button', { name: 'Retry now' }).waitFor({ timeout: SHOWS_MS });
      await page.screenshot({ path: join(SHOTS, 'console-saga.png'), fullPage: true });
      await page.getByRole('button', { name: 'Retry now' }).click();
      await page.getByRole('alert').filter({ hasText: 'a saga retry needs a reason' }).waitFor({ timeout: SHOWS_MS });
      await page.getByLabel('Reason (recorded in the log)').fill('refund system is back');
      await page.getByRole('button', { name: 'Retry now' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: /^Retried by console user via console of n1/ })
        .waitFor({ timeout: SHOWS_MS });
      // Still failing: stuck again after two attempts; then marked compensated by hand.
      const resolveButton = page.getByRole('button', { name: 'Mark step 0 compensated by hand' });
      await resolveButton.waitFor({ timeout: SHOWS_MS });
      await page.getByLabel('Reason (recorded in the log)').fill('refunded by hand, ticket 4711');
      // Offered only while it is stuck: a click between its attempts may be refused (and says so); click until it is
      // taken.
      await waitFor('the saga compensated by hand', SHOWS_MS, async () => {
        if (
          (await page
            .locator('[data-field=saga-state]')
            .filter({ hasText: /^compensated$/ })
            .count()) > 0
        )
          return true;
        if (await resolveButton.isVisible()) await resolveButton.click();
        return undefined;
      });
      // Ended: no act is offered any more, and the page says why.
      await page
        .locator('[data-note=saga-acts]')
        .filter({ hasText: 'this saga is compensated and not stuck' })
        .waitFor({ timeout: SHOWS_MS });
      expect(await page.getByRole('table').filter({ hasText: 'What the log applied' }).textContent()).toMatch(
        /refunded by hand, ticket 4711|console user/,
      );

      // Outbox relays, read from their partition leases.
      await relay.refresh();
      expect([...relay.owned().keys()].sort()).toEqual([0, 1, 2, 3]);
      await page.goto(consoleUrl(node, 'leases'));
      const relayRow = page
        .locator('table')
        .filter({ hasText: 'Relays, read from' })
        .getByRole('row')
        .filter({ hasText: 'outbox/orders' })
        .filter({ hasText: 'relay-a' });
      await relayRow.waitFor({ timeout: SHOWS_MS });
      expect(await relayRow.textContent()).toMatch(/0, 1, 2, 3/);
      await page.locator('[data-lease="outbox/orders/p3"]').waitFor({ timeout: SHOWS_MS });
      await page.screenshot({ path: join(SHOTS, 'console-leases.png'), fullPage: true });

      // Charts: commits, latency, aborts, in doubt, unacked, from samples every 5 s.
      for (let i = 0; i < 20; i++)
        await (await tClient.begin({ timeoutMs: 10_000 })).enlist('cart', { set: { [`k${i}`]: String(i) } }).commit();
      let charted = '';
      await waitFor(
        'chart samples with commits and their latency',
        30_000,
        async () => {
          const r = (await (await fetch(`http://${node.metricsAddress}/api/charts`)).json()) as {
            samples: { commitsPerS: number; p50Ms: number | null }[];
          };
          charted = JSON.stringify(r.samples.slice(-8));
          return r.samples.some((x) => x.commitsPerS > 0) && r.samples.some((x) => x.p50Ms !== null) ? true : undefined;
        },
        () => charted,
      );
      await page.goto(consoleUrl(node, 'charts'));
      for (const title of ['commits', 'commit latency', 'aborts by reason', 'in doubt', 'unacked'])
        await page.locator(`figure[data-chart="${title}"] svg`).waitFor({ timeout: SHOWS_MS });
      expect(await page.locator('figure[data-chart="commits"] polyline').count()).toBeGreaterThan(0);
      await page.screenshot({ path: join(SHOTS, 'console-charts.png'), fullPage: true });
      await page.close();
    } finally {
      await relay.releaseAll().catch(() => undefined);
      conn.close();
      tClient.close();
      await services?.stop();
      await tParts.stop();
    }
  });

  it('with TLS: HTTPS with client certificates; a non-admin certificate is refused on screen, an admin resolves; plain HTTP refuses and says why', async () => {
    const dir = certDir();
    const clusterId = uniqueClusterId();
    const ca = TestCa.create(dir, 'console-ca');
    const admin = ca.issue('ops-admin');
    const alice = ca.issue('alice');
    const [consolePort] = await freePorts(1);
    const consoleListen = `127.0.0.1:${consolePort}`;
    const adminCreds = tlsCredentials({ ca: ca.cert, cert: admin.cert, key: admin.key });
    const t = await Cluster.start({
      nodes: 1,
      metrics: true,
      clusterId,
      configExtra: (id) => ({
        consoleListen,
        tls: { ca: ca.cert, ...ca.node(id, clusterId), adminNames: ['ops-admin'] },
      }),
      clientCredentials: adminCreds,
    });
    const { node } = await t.waitForLeader({ timeoutMs: FIRST_LEADER_WAIT_MS });
    const tlsClient = new VerdictClient({ endpoints: [node.address], callTimeoutMs: 20_000, credentials: adminCreds });
    try {
      const stuck = await tlsClient.begin({ timeoutMs: 120_000 });
      const https = `https://${consoleListen}`;
      const as = async (who: { cert: string; key: string }): Promise<Page> => {
        const ctx = await browser.newContext({
          viewport: { width: 1280, height: 800 },
          ignoreHTTPSErrors: true,
          clientCertificates: [{ origin: https, certPath: who.cert, keyPath: who.key }],
        });
        return ctx.newPage();
      };

      // alice: reads work, the resolve is refused on screen with the reason.
      const page = await as(alice);
      await page.goto(`${https}/#cluster`);
      await page.locator('[data-field=role]').filter({ hasText: 'leader' }).waitFor({ timeout: SHOWS_MS });
      await page.getByText('Actions: refused').filter({ hasText: 'CN=alice is not in' }).waitFor({ timeout: SHOWS_MS });
      await page.goto(`${https}/#txn/${stuck.txnId}`);
      await page.locator('[data-field=phase]').filter({ hasText: 'begun' }).waitFor({ timeout: SHOWS_MS });
      await page.getByLabel('Reason (recorded in the log)').fill('try');
      await page.getByRole('button', { name: 'Resolve' }).click();
      await page
        .getByRole('alert')
        .filter({
          hasText:
            "Refused: PERMISSION_DENIED: txn resolve needs an admin certificate: client certificate CN=alice is not in the node's tls.adminNames",
        })
        .waitFor({ timeout: SHOWS_MS });
      await page.screenshot({ path: join(SHOTS, 'console-refused.png'), fullPage: true });
      await page.context().close();

      // Plain HTTP on the metrics listener of a TLS node: no console, no data, a pointer to the HTTPS console; /metrics
      // still served.
      for (const path of ['/', '/api/cluster', '/api/transactions', `/api/transactions/${stuck.txnId}`]) {
        const res = await fetch(`http://${node.metricsAddress}${path}`);
        expect(res.status, path).toBe(404);
        const text = await res.text();
        expect(text, path).toContain(
          `serves /metrics only; the console is served over HTTPS with client certificates on ${consoleListen}`,
        );
        expect(text, path).not.toContain(stuck.txnId);
      }
      expect((await fetch(`http://${node.metricsAddress}/metrics`)).status).toBe(200);

      // ops-admin: the same resolve goes through, recorded under the certificate's name.
      const adm = await as(admin);
      await adm.goto(`${https}/#txn/${stuck.txnId}`);
      await adm.getByLabel('Reason (recorded in the log)').fill('client gone');
      await adm.getByRole('button', { name: 'Resolve' }).click();
      await adm
        .getByRole('status')
        .filter({ hasText: /Decided: ABORTED at log index \d+, by CN=ops-admin via console of n1/ })
        .waitFor({ timeout: SHOWS_MS });
      expect((await tlsClient.outcome(stuck.txnId)).outcome).toBe('ABORTED');
      await adm.context().close();

      // No client certificate at all: the TLS handshake is refused, as on the gRPC port.
      const bare = await browser.newContext({ ignoreHTTPSErrors: true });
      const refused = await bare
        .newPage()
        .then((p) => p.goto(`${https}/api/cluster`))
        .then(
          () => 'answered',
          (err: Error) => err.message,
        );
      expect(refused).not.toBe('answered');
      await bare.close();
    } finally {
      tlsClient.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
