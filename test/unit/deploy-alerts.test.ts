// deploy/prometheus/verdict-rules.yaml: `promtool check rules` accepts it,
// and `promtool test rules` fires every alert on synthetic series that
// should fire it (and not before its `for`), with its labels, its summary
// and its runbook. The test file for promtool is written here from the
// cases below, the runbooks copied from the rules, so that each lives once.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEPLOY, type Doc, readYaml } from '../deploy-manifests.ts';

const RULES = join(DEPLOY, 'prometheus', 'verdict-rules.yaml');
const rules: Doc[] = readYaml(RULES).groups.flatMap((g: Doc) => g.rules);
const dir = mkdtempSync(join(tmpdir(), 'verdict-alerts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Synthetic series, one sample every 30s. */
const SERIES: Record<string, string> = {
  'verdict_has_leader{node="n1"}': '1 1 0x6',
  'verdict_has_leader{node="n2"}': '1x8',
  'verdict_leader_changes_seen_total{node="n1"}': '1 2 3 4 5 5 5 5 5',
  'verdict_leader_changes_seen_total{node="n2"}': '1x8',
  'verdict_decisions_unacked{node="n1"}': '3x30',
  'verdict_decisions_unacked{node="n2"}': '0x30',
  'verdict_decision_delivery_retries_total{node="n1"}': '0+60x40',
  'verdict_heuristic_outcomes_total{node="n1",kind="HEURMIX"}': '0 0 1x6',
  'verdict_heuristic_outcomes_total{node="n1",kind="HEURCOM"}': '0+1x8',
  'verdict_participant_oldest_prepared_age_seconds{participant="shop"}': '0 100 130 160 190 220 250',
  'verdict_participant_oldest_prepared_age_seconds{participant="ledger"}': '0x6',
  'verdict_participant_db_stuck_prepared{participant="shop"}': '1x12',
  'verdict_sagas_stuck{node="n1",type="order-refund"}': '2x12',
  'verdict_sagas_stuck{node="n2",type="order-refund"}': '2x12',
  'verdict_sagas_stuck{node="n1",type="(none)"}': '0x12',
  'verdict_outbox_lag_alert{instance="relay-1"}': '1x12',
  'verdict_outbox_slot_retained_bytes{instance="relay-1"}': '2147483648x30',
  'verdict_data_dir_filesystem_avail_bytes{node="n1"}': '50000000000x4 9000000000x40',
  'verdict_data_dir_filesystem_size_bytes{node="n1"}': '100000000000x40',
  'verdict_data_dir_filesystem_avail_bytes{node="n2"}': '50000000000x40',
  'verdict_data_dir_filesystem_size_bytes{node="n2"}': '100000000000x40',
  // promtool's clock starts at the epoch: n1's certificate ends 7 days later, n2's 60 days later.
  'verdict_tls_certificate_expiry_timestamp_seconds{node="n1"}': '604800x40',
  'verdict_tls_certificate_expiry_timestamp_seconds{node="n2"}': '5184000x40',
};

/** Each alert: when it must be quiet, when it must fire, with which labels and summary. */
const CASES: { alert: string; quietAt: string; firesAt: string; labels: Record<string, string>; summary: string }[] = [
  {
    alert: 'VerdictNoLeader',
    quietAt: '1m',
    firesAt: '3m',
    labels: { severity: 'critical', node: 'n1' },
    summary: 'Verdict node n1 has seen no leader for 1 minute',
  },
  {
    alert: 'VerdictLeaderFlapping',
    quietAt: '1m',
    firesAt: '4m',
    labels: { severity: 'warning', node: 'n1' },
    summary: 'Verdict node n1 saw 4 leaders take office in 15 minutes',
  },
  {
    alert: 'VerdictDecisionsUnacked',
    quietAt: '9m',
    firesAt: '11m',
    labels: { severity: 'warning', node: 'n1' },
    summary: "3 decisions on leader n1 wait for a participant's ACK for 10 minutes",
  },
  {
    alert: 'VerdictDecisionRetries',
    quietAt: '10m',
    firesAt: '16m',
    labels: { severity: 'warning', node: 'n1' },
    summary: 'Leader n1 retries DECISION deliveries at 2.0/s',
  },
  {
    alert: 'VerdictHeuristicMixed',
    quietAt: '30s',
    firesAt: '2m',
    labels: { severity: 'critical', node: 'n1', kind: 'HEURMIX' },
    summary: 'A heuristic outcome HEURMIX was recorded',
  },
  {
    alert: 'VerdictInDoubtTooLong',
    quietAt: '1m',
    firesAt: '2m30s',
    labels: { severity: 'warning', participant: 'shop' },
    summary: 'Participant shop holds a transaction in doubt for 220s',
  },
  {
    alert: 'VerdictStuckPreparedTransactions',
    quietAt: '4m',
    firesAt: '6m',
    labels: { severity: 'critical', participant: 'shop' },
    summary: 'Participant shop has 1 prepared database transactions past the threshold',
  },
  {
    alert: 'VerdictDiskFilling',
    quietAt: '12m',
    firesAt: '13m',
    labels: { severity: 'warning', node: 'n1' },
    summary: 'Node n1 has 9% of its data volume free',
  },
  {
    alert: 'VerdictCertificateExpiresSoon',
    quietAt: '5m',
    firesAt: '11m',
    labels: { severity: 'warning', node: 'n1' },
    summary: 'The TLS certificate of node n1 expires in 6d 23h 49m 0s',
  },
  {
    alert: 'VerdictSagasStuck',
    quietAt: '4m',
    firesAt: '6m',
    labels: { severity: 'warning', type: 'order-refund' },
    summary: '2 sagas of type order-refund are stuck',
  },
  {
    alert: 'VerdictOutboxLagging',
    quietAt: '4m',
    firesAt: '6m',
    labels: { severity: 'warning', instance: 'relay-1' },
    summary: "The outbox relay's lag is above its warning threshold",
  },
  {
    alert: 'VerdictOutboxSlotRetention',
    quietAt: '9m',
    firesAt: '11m',
    labels: { severity: 'critical', instance: 'relay-1' },
    summary: 'The outbox replication slot retains 2GiB of WAL',
  },
];

function promtool(args: string[]): { code: number | null; out: string } {
  const r = spawnSync('promtool', args, { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  if (r.error)
    throw new Error(`promtool: ${r.error.message} (Debian's prometheus package; scripts/test-deps.mjs installs it)`);
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('deploy/prometheus/verdict-rules.yaml', () => {
  it('promtool check rules accepts it; every alert has a severity, a summary and a runbook', () => {
    const r = promtool(['check', 'rules', RULES]);
    expect(r.code, r.out).toBe(0);
    for (const rule of rules) {
      expect(['warning', 'critical'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.runbook?.length ?? 0, rule.alert).toBeGreaterThan(80);
    }
  });

  it('promtool test rules: each alert is quiet before its time and fires on its series with its labels, summary and runbook', () => {
    expect(CASES.map((c) => c.alert).sort()).toEqual(rules.map((r) => r.alert).sort());
    const runbook = (alert: string): string => rules.find((r) => r.alert === alert)?.annotations.runbook;
    const alertTests = CASES.flatMap((c) => [
      { eval_time: c.quietAt, alertname: c.alert, exp_alerts: [] },
      {
        eval_time: c.firesAt,
        alertname: c.alert,
        exp_alerts: [{ exp_labels: c.labels, exp_annotations: { summary: c.summary, runbook: runbook(c.alert) } }],
      },
    ]);
    copyFileSync(RULES, join(dir, 'verdict-rules.yaml'));
    const test = {
      rule_files: ['verdict-rules.yaml'],
      evaluation_interval: '30s',
      tests: [
        {
          interval: '30s',
          input_series: Object.entries(SERIES).map(([series, values]) => ({ series, values })),
          alert_rule_test: alertTests,
        },
      ],
    };
    // JSON is YAML: promtool reads it as it is.
    writeFileSync(join(dir, 'verdict-rules.test.yaml'), JSON.stringify(test, null, 2));
    const r = promtool(['test', 'rules', 'verdict-rules.test.yaml']);
    expect(r.code, r.out).toBe(0);
  });
});
