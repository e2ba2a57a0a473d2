// Operating a running cluster: Prometheus metrics scraped over HTTP from three
// node processes and a participant, gRPC health on a node and on a
// participant, server reflection, and `verdict txn show` of a transaction
// that is committed but not acknowledged by every participant.

import { spawn } from 'node:child_process';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { mkdtempSync, openSync, readFileSync, closeSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerdictClient } from '../../src/client/client.ts';
import { BIN, Cluster, freePorts, ROOT, runCli, useProcessCleanup, waitFor, type NodeProc } from './harness.ts';
import {
  healthCheck,
  reflect,
  scrape,
  startParticipants,
  startUnackingParticipant,
  value,
  type Participants,
} from './ops-helpers.ts';

useProcessCleanup();

/** google.protobuf.FileDescriptorProto, as protobufjs decodes it: the parts this test reads. */
interface FileDescriptor {
  service?: { name?: string; method?: { name?: string }[] }[];
}
const { FileDescriptorProto } = createRequire(import.meta.url)('protobufjs/ext/descriptor') as {
  FileDescriptorProto: { decode(b: Uint8Array): FileDescriptor };
};

const TXN_TIMEOUT_MS = 5_000;
/** A node process can take long to start on a loaded 2-core machine; the first election waits for all of them. */
const FIRST_LEADER_WAIT_MS = 60_000;
let c: Cluster;
let parts: Participants;
let stuck: Awaited<ReturnType<typeof startUnackingParticipant>>;
let client: VerdictClient;

beforeAll(async () => {
  c = await Cluster.start({ nodes: 3, metrics: true });
  await c.waitForLeader({ timeoutMs: FIRST_LEADER_WAIT_MS });
  parts = await startParticipants(c, ['shop', 'ledger'], { metrics: true });
  stuck = await startUnackingParticipant();
  client = new VerdictClient({ insecure: true, endpoints: c.nodes.map((n) => n.address), callTimeoutMs: 20_000 });
  await client.registerParticipant('stuck', stuck.address);
}, 120_000);

afterAll(async () => {
  client?.close();
  stuck?.stop();
  await parts?.stop();
});

const endpointsFlag = (): string[] => ['--endpoints', c.nodes.map((n) => n.address).join(',')];

async function commit(set: Record<string, unknown>): Promise<{ txnId: string; outcome: string }> {
  let tx = await client.begin({ timeoutMs: TXN_TIMEOUT_MS });
  for (const [id, payload] of Object.entries(set)) tx = tx.enlist(id, payload as object);
  return tx.commit();
}

describe('operating a cluster', { timeout: 120_000 }, () => {
  it('serves Prometheus metrics on every node; counts match the transactions committed and aborted', async () => {
    const committed = 5;
    for (let i = 0; i < committed; i++)
      expect((await commit({ shop: { set: { [`m${i}`]: '1' } }, ledger: { set: { [`m${i}`]: '1' } } })).outcome).toBe(
        'COMMITTED',
      );
    expect((await commit({ shop: { set: { n: '1' } }, ledger: { fail: 'insufficient funds' } })).outcome).toBe(
      'ABORTED',
    );
    const unacked = await commit({ shop: { set: { u: '1' } }, stuck: {} });
    expect(unacked.outcome).toBe('COMMITTED');

    const { node: leader } = await c.waitForLeader();
    // Delivery to `stuck` fails and is retried with backoff (100 ms at first).
    const scrapes = await waitFor("a retried DECISION to show in the leader's metrics", 30_000, async () => {
      const s = await scrape(leader.metricsAddress as string);
      return value(s.samples, 'verdict_decision_delivery_retries_total') >= 1 ? s : undefined;
    });
    expect(scrapes.contentType).toMatch(/^text\/plain/);
    expect(scrapes.text).toMatch(/^# HELP verdict_transactions_committed_total /m);
    expect(scrapes.text).toMatch(/^# TYPE verdict_transactions_committed_total counter$/m);
    const s = scrapes.samples;
    const node = { node: leader.id };
    expect(value(s, 'verdict_raft_role', { role: 'leader', ...node })).toBe(1);
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect(value(s, 'verdict_build_info', { version, nodejs_version: process.version, ...node })).toBe(1);
    expect(value(s, 'verdict_raft_role', { role: 'follower' })).toBe(0);
    expect(value(s, 'verdict_raft_term')).toBeGreaterThanOrEqual(1);
    expect(value(s, 'verdict_has_leader', node)).toBe(1);
    expect(value(s, 'verdict_leader_changes_seen_total', node)).toBeGreaterThanOrEqual(1);
    expect(scrapes.text).toMatch(/^# TYPE verdict_leader_changes_seen_total counter$/m);
    expect(value(s, 'verdict_data_dir_filesystem_avail_bytes', node)).toBeGreaterThan(0);
    expect(value(s, 'verdict_data_dir_filesystem_size_bytes', node)).toBeGreaterThanOrEqual(
      value(s, 'verdict_data_dir_filesystem_avail_bytes', node),
    );
    // A plaintext node has no certificate to expire.
    expect(scrapes.text).not.toMatch(/verdict_tls_certificate_expiry_timestamp_seconds/);
    const commitIndex = value(s, 'verdict_raft_commit_index');
    expect(commitIndex).toBeGreaterThanOrEqual(committed + 1);
    expect(value(s, 'verdict_raft_applied_index')).toBeLessThanOrEqual(commitIndex);
    expect(value(s, 'verdict_raft_last_index')).toBeGreaterThanOrEqual(commitIndex);
    expect(value(s, 'verdict_raft_persist_duration_seconds_count', { sync: 'true' })).toBeGreaterThan(0);
    expect(value(s, 'verdict_raft_append_batch_entries_count')).toBeGreaterThan(0);
    expect(value(s, 'verdict_raft_append_batch_entries_sum')).toBeGreaterThanOrEqual(committed);
    expect(value(s, 'verdict_transactions_begun_total')).toBeGreaterThanOrEqual(committed + 2);
    expect(value(s, 'verdict_transactions_committed_total')).toBeGreaterThanOrEqual(committed + 1);
    expect(value(s, 'verdict_transactions_aborted_total', { reason: 'vote_no' })).toBeGreaterThanOrEqual(1);
    expect(value(s, 'verdict_transactions_aborted_total', { reason: 'timeout' })).toBe(0);
    expect(value(s, 'verdict_commit_duration_seconds_count', { outcome: 'committed' })).toBeGreaterThanOrEqual(
      committed + 1,
    );
    expect(value(s, 'verdict_commit_duration_seconds_count', { outcome: 'aborted' })).toBeGreaterThanOrEqual(1);
    // Per participant: each PREPARE's round trip and vote.
    expect(value(s, 'verdict_participant_votes_total', { participant: 'ledger', vote: 'yes' })).toBeGreaterThanOrEqual(
      committed,
    );
    expect(value(s, 'verdict_participant_votes_total', { participant: 'ledger', vote: 'no' })).toBeGreaterThanOrEqual(
      1,
    );
    expect(value(s, 'verdict_participant_votes_total', { participant: 'shop', vote: 'yes' })).toBeGreaterThanOrEqual(
      committed + 2,
    );
    expect(
      value(s, 'verdict_prepare_duration_seconds_count', { participant: 'ledger', vote: 'no' }),
    ).toBeGreaterThanOrEqual(1);
    expect(value(s, 'verdict_prepare_duration_seconds_count', { participant: 'shop', vote: 'yes' })).toBe(
      value(s, 'verdict_participant_votes_total', { participant: 'shop', vote: 'yes' }),
    );
    expect(value(s, 'verdict_prepare_duration_seconds_sum', { participant: 'shop', vote: 'yes' })).toBeGreaterThan(0);
    expect(scrapes.text).toMatch(/^# TYPE verdict_prepare_duration_seconds histogram$/m);
    // Runtime metrics under their stock names; no gauge named *_total.
    expect(value(s, 'process_cpu_seconds_total', node)).toBeGreaterThan(0);
    expect(value(s, 'nodejs_heap_size_used_bytes', node)).toBeGreaterThan(0);
    expect(scrapes.text).not.toMatch(/^verdict_(process|nodejs)_/m);
    for (const m of scrapes.text.matchAll(/^# TYPE (\S+_total) (\S+)$/gm)) expect(m[2], m[1]).toBe('counter');
    expect(value(s, 'verdict_transactions_in_flight')).toBe(0);
    expect(value(s, 'verdict_decisions_unacked')).toBeGreaterThanOrEqual(1);

    // A follower reports its own Raft state and no leader work.
    const follower = c.nodes.find((n) => n !== leader) as NodeProc;
    const f = (await scrape(follower.metricsAddress as string)).samples;
    expect(value(f, 'verdict_raft_role', { role: 'follower', node: follower.id })).toBe(1);
    expect(value(f, 'verdict_transactions_committed_total')).toBe(0);
    await waitFor(`${follower.id} to apply up to ${commitIndex}`, 10_000, async () =>
      value((await scrape(follower.metricsAddress as string)).samples, 'verdict_raft_applied_index') >= commitIndex
        ? true
        : undefined,
    );

    // A participant's own metrics.
    const shop = parts.runtimes.get('shop');
    const p = (await scrape(shop?.metricsAddress as string)).samples;
    expect(value(p, 'verdict_participant_prepared', { participant: 'shop' })).toBe(0);
    expect(value(p, 'verdict_participant_oldest_prepared_age_seconds')).toBe(0);
    expect(value(p, 'verdict_participant_votes_total', { vote: 'yes' })).toBeGreaterThanOrEqual(committed + 2);
  });

  it('answers grpc.health.v1 SERVING on a node and a participant; reflection lists the services', async () => {
    const node = c.nodes[0];
    expect(await healthCheck(node.address)).toBe('SERVING');
    expect(await healthCheck(node.address, 'verdict.coordinator.Coordinator')).toBe('SERVING');
    await expect(healthCheck(node.address, 'no.such.Service')).rejects.toMatchObject({ code: 5 /* NOT_FOUND */ });
    const shop = parts.runtimes.get('shop');
    expect(await healthCheck(shop?.address as string)).toBe('SERVING');
    expect(await healthCheck(shop?.address as string, 'verdict.participant.Participant')).toBe('SERVING');

    const listed = await reflect(node.address, { listServices: '*' });
    const names = listed.listServicesResponse?.service.map((x) => x.name) ?? [];
    expect(names).toEqual(
      expect.arrayContaining(['verdict.coordinator.Coordinator', 'verdict.raft.RaftNode', 'grpc.health.v1.Health']),
    );
    // Enough for a stock client to build its calls: the file that defines Coordinator, with its methods.
    const file = await reflect(node.address, { fileContainingSymbol: 'verdict.coordinator.Coordinator' });
    const protos = (file.fileDescriptorResponse?.fileDescriptorProto ?? []).map((b) => FileDescriptorProto.decode(b));
    const svc = protos.flatMap((f) => f.service ?? []).find((x) => x.name === 'Coordinator');
    expect(svc?.method?.map((m) => m.name)).toEqual(
      expect.arrayContaining(['Begin', 'Commit', 'GetOutcome', 'ListTransactions']),
    );

    const onParticipant = await reflect(shop?.address as string, { listServices: '*' });
    expect(onParticipant.listServicesResponse?.service.map((x) => x.name)).toEqual(
      expect.arrayContaining(['verdict.participant.Participant']),
    );
  });

  it('verdict txn show prints the participants, votes and ACKs of a committed-but-unacked transaction', async () => {
    const r = await commit({ shop: { set: { show: '1' } }, stuck: {} });
    expect(r.outcome).toBe('COMMITTED');
    // The shop ACKs at once; `stuck` never does, so the leader keeps delivering.
    const shown = await waitFor('shop to acknowledge and a retry towards stuck', 60_000, async () => {
      const out = await runCli(['txn', 'show', r.txnId, '--json', ...endpointsFlag()], { timeoutMs: 30_000 });
      if (out.code !== 0) throw new Error(`exit ${out.code}: ${out.stderr}`);
      const j = JSON.parse(out.stdout) as {
        participants: { participantId: string; acked: boolean; retries: number; vote: string }[];
      };
      const shop = j.participants.find((p) => p.participantId === 'shop');
      const st = j.participants.find((p) => p.participantId === 'stuck');
      return shop?.acked && (st?.retries ?? 0) >= 1 ? j : undefined;
    });
    expect(shown).toMatchObject({ txnId: r.txnId, outcome: 'COMMITTED', phase: 'delivering' });
    expect(shown.participants).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ participantId: 'shop', vote: 'yes', acked: true }),
        expect.objectContaining({ participantId: 'stuck', vote: 'yes', acked: false }),
      ]),
    );

    const text = await runCli(['txn', 'show', r.txnId, ...endpointsFlag()], { timeoutMs: 30_000 });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`transaction\\s+${r.txnId}`));
    expect(text.stdout).toMatch(/outcome\s+COMMITTED/);
    expect(text.stdout).toMatch(/phase\s+delivering/);
    expect(text.stdout).toMatch(/^shop\s+yes\s+yes\s+0$/m);
    expect(text.stdout).toMatch(/^stuck\s+yes\s+no\s+[1-9]\d*$/m);

    const unknown = await runCli(['txn', 'show', 'never-begun-txn', ...endpointsFlag()], { timeoutMs: 30_000 });
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toMatch(/outcome\s+UNKNOWN/);
  });

  it('verdict txn show prints a stored reason with its control characters escaped, never raw to the terminal', async () => {
    // A NO vote whose reason carries a clipboard-write sequence (OSC 52), a line rewrite and a forged line.
    const hostile = 'funds\u001b]52;c;ZXZpbA==\u0007\r\u001b[2Kok\nCOMMITTED';
    const r = await commit({ shop: { set: { esc: '1' } }, ledger: { fail: hostile } });
    expect(r.outcome).toBe('ABORTED');
    const text = await runCli(['txn', 'show', r.txnId, ...endpointsFlag()], { timeoutMs: 30_000 });
    expect(text.code, text.stderr).toBe(0);
    // No control character but the line ends reaches the terminal.
    const raw = [...text.stdout].filter((ch) => ch !== '\n' && (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f));
    expect(raw).toEqual([]);
    expect(text.stdout).toContain('funds\\e]52;c;ZXZpbA==\\x07\\r\\e[2Kok\\nCOMMITTED');
    // --json is JSON: the reason is there in full, escaped by JSON itself.
    const json = await runCli(['txn', 'show', r.txnId, '--json', ...endpointsFlag()], { timeoutMs: 30_000 });
    expect(JSON.stringify(JSON.parse(json.stdout))).toContain(JSON.stringify(hostile).slice(1, -1));
  });

  it('the console answers only to its own names or an IP (DNS rebinding), and never inside a frame', async () => {
    const address = c.nodes[0].metricsAddress as string;
    const port = Number(address.slice(address.lastIndexOf(':') + 1));
    const get = (path: string, host: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> =>
      new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        });
        req.on('error', reject);
        req.end();
      });
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const ok = await get('/api/cluster', host);
      expect(ok.status, ok.body).toBe(200);
      expect(ok.headers['content-security-policy']).toBe("frame-ancestors 'none'");
      expect(ok.headers['x-frame-options']).toBe('DENY');
    }
    // A name that resolves here only because an attacker's DNS said so: refused, for the page and the API alike.
    for (const path of ['/', '/api/cluster', '/api/transactions?filter=all']) {
      const rebound = await get(path, `attacker.example:${port}`);
      expect(rebound.status, path).toBe(421);
      expect(rebound.body).toContain('is not a name of this console');
    }
    // /metrics is not the console: Prometheus may scrape it by any name.
    expect((await get('/metrics', `prometheus-target.example:${port}`)).status).toBe(200);
  });

  it('a participant process serves metrics and health, and SIGTERM stops it with exit code 0', async () => {
    const [port, metricsPort] = await freePorts(2);
    const dir = mkdtempSync(join(tmpdir(), 'verdict-ops-participant-'));
    const logFile = join(dir, 'participant.log');
    const fd = openSync(logFile, 'a');
    const child = spawn(
      process.execPath,
      [
        BIN,
        'participant',
        '--id',
        'proc',
        '--listen',
        `127.0.0.1:${port}`,
        '--metrics-listen',
        `127.0.0.1:${metricsPort}`,
        '--data',
        join(dir, 'data'),
        '--cluster-id',
        c.clusterId,
        ...endpointsFlag(),
        '--insecure',
      ],
      { cwd: ROOT, stdio: ['ignore', fd, fd], env: { ...process.env, VERDICT_LOG_FORMAT: 'json' } },
    );
    closeSync(fd);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitFor(
        'the participant process to register',
        45_000,
        async () => ((await client.participants()).some((p) => p.participantId === 'proc') ? true : undefined),
        () => readFileSync(logFile, 'utf8'),
      );
      expect(await healthCheck(`127.0.0.1:${port}`)).toBe('SERVING');
      const m = (await scrape(`127.0.0.1:${metricsPort}`)).samples;
      expect(value(m, 'verdict_participant_prepared', { participant: 'proc' })).toBe(0);
      expect(value(m, 'verdict_participant_oldest_prepared_age_seconds')).toBe(0);
      expect((await commit({ shop: { set: { p: '1' } }, proc: { set: { p: '1' } } })).outcome).toBe('COMMITTED');
      // The client hears COMMITTED once the decision is logged; its delivery to proc may still be under way.
      await waitFor('proc to apply the decision', 30_000, async () =>
        value((await scrape(`127.0.0.1:${metricsPort}`)).samples, 'verdict_participant_prepared', {
          participant: 'proc',
        }) === 0
          ? true
          : undefined,
      );

      child.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 10_000))]);
      expect(code, readFileSync(logFile, 'utf8')).toBe(0);
      const log = readFileSync(logFile, 'utf8');
      const lines = log
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.find((l) => l.msg === 'participant stopped')).toMatchObject({ participantId: 'proc', prepared: 0 });
      // Lines about a transaction name it and the participant.
      for (const l of lines) if ('txnId' in l) expect(l).toMatchObject({ participantId: 'proc' });
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
