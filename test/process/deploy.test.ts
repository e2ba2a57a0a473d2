// deploy/kubernetes on loopback: three nodes started with exactly the
// commands, environment and files the StatefulSet gives its containers,
// read from the YAML. The mapping from a pod to this machine is small and
// written out in `podMapping`: pod names' hosts go to 127.0.0.1 ports, the
// pod's mount paths to folders of a temp dir, and `verdict` on PATH to this
// checkout's bin/verdict.mjs. The Secret holds what `verdict certs` makes
// (ca.crt and n1..n3 .crt/.key). Each pod's init container runs (founding),
// then its node; the readiness probe must pass on every node, and a
// transaction through two TLS participants is COMMITTED.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEPLOY, type Doc, findObject, kubernetesObjects, readYaml } from '../deploy-manifests.ts';
import { BIN, freePorts, ROOT, runCli, sleep, tempDir, useProcessCleanup, waitFor } from './harness.ts';

useProcessCleanup();

const WAIT_MS = 90_000;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

interface Pod {
  ordinal: number;
  dir: string;
  /** Rewrites a string of the manifests for this pod on this machine. */
  map(text: string): string;
  env: NodeJS.ProcessEnv;
}

/** The whole mapping from a pod of the StatefulSet to loopback. */
function podMapping(o: {
  ordinal: number;
  root: string;
  secretDir: string;
  grpcPorts: number[];
  metricsPorts: number[];
  binDir: string;
  serviceName: string;
}): Pod {
  const dir = join(o.root, `verdict-${o.ordinal}`);
  const pairs: [string, string][] = [
    ...o.grpcPorts.map((p, j): [string, string] => [`verdict-${j}.${o.serviceName}:7001`, `127.0.0.1:${p}`]),
    ['0.0.0.0:7001', `127.0.0.1:${o.grpcPorts[o.ordinal]}`],
    ['127.0.0.1:7001', `127.0.0.1:${o.grpcPorts[o.ordinal]}`],
    ['0.0.0.0:9101', `127.0.0.1:${o.metricsPorts[o.ordinal]}`],
    ['/var/lib/verdict', join(dir, 'data-volume')],
    ['/etc/verdict/config', join(dir, 'config')],
    ['/etc/verdict/tls', o.secretDir],
  ];
  const map = (text: string): string => pairs.reduce((t, [from, to]) => t.split(from).join(to), text);
  const env = { ...process.env, PATH: `${o.binDir}:${process.env.PATH ?? ''}`, HOSTNAME: `verdict-${o.ordinal}` };
  return { ordinal: o.ordinal, dir, map, env };
}

/** A container's environment from its manifest: plain values and ConfigMap keys. */
function containerEnv(c: Doc, configMap: Doc): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of c.env ?? []) {
    if (e.value !== undefined) out[e.name] = String(e.value);
    else if (e.valueFrom?.configMapKeyRef?.name === configMap.metadata.name)
      out[e.name] = String(configMap.data[e.valueFrom.configMapKeyRef.key]);
    else throw new Error(`env ${e.name} of ${c.name}: only values and keys of ${configMap.metadata.name} are mapped`);
  }
  return out;
}

/** Runs `argv` (a container's command and args, mapped) to completion, bounded. */
async function runToEnd(argv: string[], env: NodeJS.ProcessEnv, logFile: string): Promise<number | null> {
  const fd = openSync(logFile, 'a');
  const child = spawn(argv[0], argv.slice(1), { cwd: ROOT, env, stdio: ['ignore', fd, fd] });
  children.push(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), WAIT_MS);
  const code = await new Promise<number | null>((res) => child.once('exit', (c) => res(c)));
  clearTimeout(timer);
  return code;
}

/**
 * Metric names in the Grafana dashboard's queries and the alert rules' expressions (histogram series folded to their
 * metric).
 */
function dashboardAndRuleMetrics(): Set<string> {
  const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana', 'verdict-dashboard.json'), 'utf8'));
  const exprs: string[] = [
    ...dashboard.panels.flatMap((p: Doc) => p.targets.map((t: Doc) => t.expr as string)),
    ...readYaml(join(DEPLOY, 'prometheus', 'verdict-rules.yaml')).groups.flatMap((g: Doc) =>
      g.rules.map((r: Doc) => r.expr as string),
    ),
  ];
  const names = new Set<string>();
  for (const e of exprs)
    for (const m of e.matchAll(/\b(?:verdict|process|nodejs)_[a-z0-9_]+/g))
      names.add(m[0].replace(/_(bucket|sum|count)$/, ''));
  return names;
}

/**
 * Metrics of processes this test does not start: a participant's database
 * resource (PostgreSQL, MySQL) and the outbox relay. Each is checked to be
 * defined in its exporter's source.
 */
const OTHER_EXPORTERS: Record<string, string> = {
  verdict_participant_db_stuck_prepared: 'src/participant/metrics.ts',
  verdict_outbox_unpublished_rows: 'src/outbox/relay-runner.ts',
  verdict_outbox_slot_retained_bytes: 'src/outbox/relay-runner.ts',
  verdict_outbox_lag_alert: 'src/outbox/relay-runner.ts',
};
function exportedElsewhere(name: string): boolean {
  const file = OTHER_EXPORTERS[name];
  return file !== undefined && readFileSync(join(ROOT, file), 'utf8').includes(`'${name}'`);
}

describe('deploy/kubernetes on loopback', () => {
  it('three nodes as the StatefulSet runs them (init container, node, readiness probe), TLS from verdict certs as the Secret holds it, commit a transaction', async () => {
    const { objects } = kubernetesObjects();
    const sts = findObject(objects, 'StatefulSet', 'verdict');
    const cm = findObject(objects, 'ConfigMap', 'verdict-config');
    const podSpec = sts.spec.template.spec as Doc;
    const init = podSpec.initContainers.find((c: Doc) => c.name === 'found');
    const node = podSpec.containers.find((c: Doc) => c.name === 'verdict');
    const clusterId = JSON.parse(cm.data['verdict.json']).clusterId as string;

    const root = tempDir('verdict-deploy-');
    const grpcPorts = await freePorts(3);
    const metricsPorts = await freePorts(3);
    const [shopPort, ledgerPort, shopMetricsPort, ledgerMetricsPort] = await freePorts(4);

    // The certificates as `verdict certs` makes them; the Secret gets the CA certificate and the nodes' files, never
    // ca.key.
    const certs = join(root, 'certs');
    const made = await runCli(
      [
        'certs',
        '--dir',
        certs,
        '--cluster-id',
        clusterId,
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
    const secretDir = join(root, 'secret-verdict-tls');
    mkdirSync(secretDir);
    for (const f of ['ca.crt', 'n1.crt', 'n1.key', 'n2.crt', 'n2.key', 'n3.crt', 'n3.key'])
      copyFileSync(join(certs, f), join(secretDir, f));

    // `verdict` on PATH, as in the image.
    const binDir = join(root, 'bin');
    mkdirSync(binDir);
    writeFileSync(join(binDir, 'verdict'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
    chmodSync(join(binDir, 'verdict'), 0o755);

    const pods = [0, 1, 2].map((ordinal) =>
      podMapping({ ordinal, root, secretDir, grpcPorts, metricsPorts, binDir, serviceName: sts.spec.serviceName }),
    );
    for (const pod of pods) {
      mkdirSync(join(pod.dir, 'config'), { recursive: true });
      mkdirSync(join(pod.dir, 'data-volume'));
      for (const [key, text] of Object.entries(cm.data as Record<string, string>))
        writeFileSync(join(pod.dir, 'config', key), pod.map(text));
    }
    const argv = (pod: Pod, c: Doc): string[] =>
      [...(c.command ?? []), ...(c.args ?? [])].map((s: string) => pod.map(s));

    // Init containers (founding) run in parallel, as the pods start in parallel; each must succeed.
    const initCodes = await Promise.all(
      pods.map((pod) =>
        runToEnd(argv(pod, init), { ...pod.env, ...containerEnv(init, cm) }, join(pod.dir, 'init.log')),
      ),
    );
    expect(initCodes, pods.map((p) => readFileSync(join(p.dir, 'init.log'), 'utf8')).join('\n')).toEqual([0, 0, 0]);
    for (const pod of pods)
      expect(readFileSync(join(pod.dir, 'init.log'), 'utf8')).toMatch(
        new RegExp(`founded cluster "${clusterId}" .* for n${pod.ordinal + 1}`),
      );

    const nodes = pods.map((pod) => {
      const fd = openSync(join(pod.dir, 'node.log'), 'a');
      const child = spawn(argv(pod, node)[0], argv(pod, node).slice(1), {
        cwd: ROOT,
        env: { ...pod.env, ...containerEnv(node, cm) },
        stdio: ['ignore', fd, fd],
      });
      children.push(child);
      return child;
    });
    const logs = (): string =>
      pods
        .map((p) => `--- verdict-${p.ordinal}\n${readFileSync(join(p.dir, 'node.log'), 'utf8').slice(-2_000)}`)
        .join('\n');

    // The readiness probe, as the kubelet runs it in each pod, passes on every node.
    for (const pod of pods) {
      await waitFor(
        `the readiness probe of verdict-${pod.ordinal} to pass`,
        WAIT_MS,
        async () =>
          (await runToEnd(
            argv(pod, node.readinessProbe.exec),
            { ...pod.env, ...containerEnv(node, cm) },
            join(pod.dir, 'probe.log'),
          )) === 0
            ? true
            : undefined,
        logs,
      );
    }

    const endpoints = grpcPorts.map((p) => `127.0.0.1:${p}`).join(',');
    const tls = (name: string): string[] => [
      '--ca',
      join(certs, 'ca.crt'),
      '--cert',
      join(certs, `${name}.crt`),
      '--key',
      join(certs, `${name}.key`),
    ];
    for (const [id, port, metricsPort] of [
      ['shop', shopPort, shopMetricsPort],
      ['ledger', ledgerPort, ledgerMetricsPort],
    ] as const) {
      const p = spawn(
        process.execPath,
        [
          BIN,
          'participant',
          '--id',
          id,
          '--cluster-id',
          clusterId,
          '--listen',
          `127.0.0.1:${port}`,
          '--data',
          join(root, id),
          '--endpoints',
          endpoints,
          '--metrics-listen',
          `127.0.0.1:${metricsPort}`,
          ...tls(id),
        ],
        {
          cwd: ROOT,
          stdio: 'ignore',
        },
      );
      children.push(p);
    }
    const asAlice = ['--endpoints', endpoints, ...tls('alice')];
    await waitFor('both participants to register over TLS', WAIT_MS, async () => {
      const r = await runCli(['participants', '--json', ...asAlice], { timeoutMs: WAIT_MS });
      const ids =
        r.code === 0 ? (JSON.parse(r.stdout) as { participantId: string }[]).map((x) => x.participantId).sort() : [];
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

    // Every metric the dashboard and the alert rules name is exported: by these nodes and participants, after a
    // transaction.
    const scraped = new Set<string>();
    for (const port of [...metricsPorts, shopMetricsPort, ledgerMetricsPort]) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) scraped.add(m[1]);
    }
    const missing = [...dashboardAndRuleMetrics()].filter((name) => !scraped.has(name) && !exportedElsewhere(name));
    expect(missing).toEqual([]);

    // SIGTERM, as the kubelet stops a pod: every node exits cleanly.
    const exits = nodes.map(
      (c) =>
        new Promise<number | null>((res) =>
          c.exitCode !== null ? res(c.exitCode) : c.once('exit', (code) => res(code)),
        ),
    );
    for (const c of nodes) c.kill('SIGTERM');
    const codes = await Promise.race([Promise.all(exits), sleep(30_000).then(() => null)]);
    expect(codes, logs()).toEqual([0, 0, 0]);
  }, 300_000);
});
