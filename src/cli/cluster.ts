// `verdict cluster up`: a local cluster in the foreground, one process per
// node. Three nodes use the ready configs in cluster/; other sizes get
// generated configs under data/. Ctrl-C stops every node cleanly.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { logFormat } from '../node/logger.ts';
import { envName, OVERRIDABLE } from '../node/config-sources.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin', 'verdict.mjs');

export function localConfigs(n: number): string[] {
  if (n === 3) return [1, 2, 3].map((i) => join(ROOT, 'cluster', `n${i}.json`));
  const dir = join(ROOT, 'data', `cluster-${n}`);
  mkdirSync(dir, { recursive: true });
  const peers: Record<string, string> = {};
  for (let i = 1; i <= n; i++) peers[`n${i}`] = `127.0.0.1:${7000 + i}`;
  const files: string[] = [];
  for (let i = 1; i <= n; i++) {
    const file = join(dir, `n${i}.json`);
    const cfg = { clusterId: `local-${n}`, nodeId: `n${i}`, listen: peers[`n${i}`], metricsListen: `127.0.0.1:${9100 + i}`, dataDir: `n${i}`, peers, tickMs: 100, electionTicks: 10, heartbeatTicks: 1, snapshotEntries: 10000, logLevel: 'info' };
    writeFileSync(file, JSON.stringify(cfg, null, 2) + '\n');
    files.push(file);
  }
  return files;
}

export async function clusterUp(n: number): Promise<void> {
  const configs = localConfigs(n);
  const children = new Map<string, ChildProcess>();
  let stopping = false;
  for (const [i, file] of configs.entries()) {
    const id = `n${i + 1}`;
    // The children's stderr is a pipe to us: tell them whether a person is watching.
    const env: NodeJS.ProcessEnv = { ...process.env, VERDICT_LOG_FORMAT: process.env.VERDICT_LOG_FORMAT ?? logFormat() };
    // The local cluster's configs are complete: node config overrides meant for
    // a single node or for client commands (VERDICT_NODE_ID, VERDICT_TLS_CA, ...)
    // would turn three nodes into three copies of one, or half-configure TLS.
    for (const key of Object.keys(OVERRIDABLE)) delete env[envName(key)];
    const child = spawn(process.execPath, [BIN, 'node', '--config', file], { stdio: ['ignore', 'inherit', 'pipe'], env });
    children.set(id, child);
    // Prefix each node's log lines so three streams stay readable in one terminal.
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => process.stderr.write(`[${id}] ${line}\n`));
    // 'close', not 'exit': the node's last log lines must be read before we go.
    child.on('close', (code, signal) => {
      children.delete(id);
      if (!stopping) process.stderr.write(`[${id}] exited (${signal ?? `code ${code}`}); the other nodes keep running\n`);
      if (children.size === 0) process.exit(stopping ? 0 : 1);
    });
  }
  process.stderr.write(
    `verdict: local cluster of ${n} node(s) on 127.0.0.1:7001${n > 1 ? `-${7000 + n}` : ''}, metrics on http://127.0.0.1:9101/metrics${n > 1 ? ` (-${9100 + n})` : ''}; try \`npx verdict status\`; Ctrl-C stops it\n`,
  );
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write('verdict: stopping the cluster\n');
    for (const c of children.values()) c.kill('SIGTERM');
    // A node that does not stop within 10 s is killed.
    setTimeout(() => {
      for (const c of children.values()) c.kill('SIGKILL');
    }, 10_000).unref();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
