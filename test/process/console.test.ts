// The web console in a real browser: Debian's chromium, driven by
// playwright-core, against a real three-node cluster with two participants.
// The pages render the live state, a committed transaction's timeline shows
// its PREPAREs, VOTEs, decision (with its log index) and ACKs, a follower's
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
import { Cluster, freePorts, ROOT, uniqueClusterId, useProcessCleanup, waitFor, type NodeProc } from './harness.ts';
import { startParticipants, type Participants } from './ops-helpers.ts';

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
  if (!existsSync(CHROMIUM)) throw new Error(`the browser test needs chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`);
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'], headless: true });
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
    await waitFor('both peers shown up', SHOWS_MS, async () => ((await page.locator('td .up').count()) === 3 ? true : undefined));
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

    // The committed transaction's timeline: begin, a PREPARE and a VOTE per participant, the decision with its log index, the ACKs.
    await page.locator('[data-field=outcome]').filter({ hasText: 'committed' }).waitFor({ timeout: SHOWS_MS });
    // The COMMIT entry's index, as the log has it. Under parallel commit (the default) the client's own
    // answer names the STAGING record's index, and the explicit COMMIT comes after it (docs/protocol.md).
    const indexField = page.locator('[data-field=decision-index]').filter({ hasText: /^\s*\d+\s*$/ });
    await indexField.waitFor({ timeout: SHOWS_MS });
    const shownIndex = Number(((await indexField.textContent()) ?? '').trim());
    expect(shownIndex).toBeGreaterThanOrEqual(committed.decisionIndex);
    expect((await client.outcome(committed.txnId)).decisionIndex).toBe(shownIndex);
    const rows = page.locator('table').filter({ hasText: 'Events node' }).locator('tbody tr');
    await waitFor('the ACKs in the timeline', SHOWS_MS, async () => ((await rows.allInnerTexts()).filter((r) => /\tack\t/.test(r)).length === 2 ? true : undefined));
    const timeline = (await rows.allInnerTexts()).map((r) => r.split('\t').map((x) => x.trim()));
    const kinds = timeline.map((r) => `${r[1]} ${r[2]}`);
    expect(kinds[0]).toBe('begin —');
    for (const p of ['shop', 'ledger']) for (const k of ['prepare', 'vote', 'decision-sent', 'ack']) expect(kinds).toContain(`${k} ${p}`);
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
    await page.screenshot({ path: join(SHOTS, 'console-transaction.png'), fullPage: true });

    // Bad input: a resolve with no reason, an unknown transaction, API parameters out of range.
    await page.getByRole('button', { name: 'Resolve' }).click();
    await page.getByRole('alert').filter({ hasText: 'needs a reason' }).waitFor({ timeout: SHOWS_MS });
    await page.goto(consoleUrl(leader, 'txn/no-such-txn-42'));
    await page.getByRole('alert').filter({ hasText: 'no transaction "no-such-txn-42" is known' }).waitFor({ timeout: SHOWS_MS });
    const bad = await page.evaluate(async () => {
      const r = await fetch('/api/transactions?filter=stuck&limit=abc');
      return { status: r.status, body: (await r.json()) as { error: string } };
    });
    expect(bad).toEqual({ status: 400, body: { error: 'filter "stuck" is not one of in-flight, in-doubt, unacked, heuristic, all' } });
    const badLimit = await page.evaluate(async () => (await fetch('/api/transactions?limit=0')).json());
    expect(badLimit).toEqual({ error: 'limit "0" must be a whole number from 1 to 1000' });

    // Participants: both, with their addresses, heard from by the leader.
    await page.goto(consoleUrl(leader, 'participants'));
    for (const [id, p] of parts.runtimes) await page.getByRole('row').filter({ hasText: id }).filter({ hasText: p.address }).waitFor({ timeout: SHOWS_MS });
    expect(await page.getByRole('row').filter({ hasText: 'shop' }).textContent()).toMatch(/ago/);
    // Each participant's resource kind, as it said when it registered.
    expect(await page.getByRole('row').filter({ hasText: 'ledger' }).textContent()).toMatch(/memory/);
    const api = (await page.evaluate(async () => (await fetch('/api/participants')).json())) as { participants: { id: string; kind: string }[] };
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
      .filter({ hasText: /Decided: aborted at log index \d+, by ada via console of/ })
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

    // A follower's cluster page while the leader is SIGKILLed: the new leader within seconds, the old one shown down.
    const follower = c.nodes.find((n) => n !== current)!;
    const watch = await open(follower, 'cluster');
    await watch.locator('[data-field=leader]').filter({ hasText: current.id }).waitFor({ timeout: SHOWS_MS });
    await current.kill('SIGKILL');
    const { node: next } = await c.waitForLeader({ notId: current.id });
    await watch.locator('[data-field=leader]').filter({ hasText: next.id }).waitFor({ timeout: SHOWS_MS });
    await watch.getByRole('row').filter({ hasText: current.id }).locator('.down').waitFor({ timeout: SHOWS_MS });
    const changes = await watch.locator('table').filter({ hasText: 'Leaders node' }).locator('tbody tr').allInnerTexts();
    expect(changes[0]).toMatch(new RegExp(`\\b${next.id}$`));
    await watch.close();
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
      configExtra: (id) => ({ consoleListen, tls: { ca: ca.cert, ...ca.node(id, clusterId), adminNames: ['ops-admin'] } }),
      clientCredentials: adminCreds,
    });
    const { node } = await t.waitForLeader({ timeoutMs: FIRST_LEADER_WAIT_MS });
    const tlsClient = new VerdictClient({ endpoints: [node.address], callTimeoutMs: 20_000, credentials: adminCreds });
    try {
      const stuck = await tlsClient.begin({ timeoutMs: 120_000 });
      const https = `https://${consoleListen}`;
      const as = async (who: { cert: string; key: string }): Promise<Page> => {
        const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, ignoreHTTPSErrors: true, clientCertificates: [{ origin: https, certPath: who.cert, keyPath: who.key }] });
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
        .filter({ hasText: "Refused: PERMISSION_DENIED: txn resolve needs an admin certificate: client certificate CN=alice is not in the node's tls.adminNames" })
        .waitFor({ timeout: SHOWS_MS });
      await page.screenshot({ path: join(SHOTS, 'console-refused.png'), fullPage: true });
      await page.context().close();

      // Plain HTTP on the metrics listener of a TLS node: no console, no data, a pointer to the HTTPS console; /metrics still served.
      for (const path of ['/', '/api/cluster', '/api/transactions', `/api/transactions/${stuck.txnId}`]) {
        const res = await fetch(`http://${node.metricsAddress}${path}`);
        expect(res.status, path).toBe(404);
        const text = await res.text();
        expect(text, path).toContain(`serves /metrics only; the console is served over HTTPS with client certificates on ${consoleListen}`);
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
        .filter({ hasText: /Decided: aborted at log index \d+, by CN=ops-admin via console of n1/ })
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
