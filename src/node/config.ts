// A node's configuration file (JSON), validated before anything else runs.
// Every error is one line naming the file, the key and the expected form.

import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';

export interface NodeConfig {
  /** The file this came from, for error messages. */
  file: string;
  clusterId: string;
  nodeId: string;
  /** host:port where this node serves peers and clients. */
  listen: string;
  /** host:port of the Prometheus HTTP endpoint (GET /metrics); null: none. */
  metricsListen: string | null;
  /** Absolute path of the data directory (resolved against the config file's folder). */
  dataDir: string;
  /** Every voter of the cluster, this node included: id → host:port. */
  peers: Map<string, string>;
  tickMs: number;
  electionTicks: number;
  heartbeatTicks: number;
  snapshotEntries: number;
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
}

export class ConfigError extends Error {
  constructor(file: string, what: string) {
    super(`config ${file}: ${what}`);
    this.name = 'ConfigError';
  }
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ADDRESS = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export function parseAddress(s: string): { host: string; port: number } | null {
  const m = ADDRESS.exec(s);
  if (!m) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1], port };
}

export function loadConfig(file: string): NodeConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, `cannot read the file (${(err as NodeJS.ErrnoException).code ?? String(err)}); pass --config with the path of a node's JSON config, e.g. cluster/n1.json`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(file, `not valid JSON (${(err as Error).message}); fix the syntax — cluster/n1.json shows the expected form`);
  }
  return parseConfig(raw, file);
}

export function parseConfig(raw: unknown, file: string): NodeConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ConfigError(file, 'expected a JSON object');
  const o = raw as Record<string, unknown>;
  const known = new Set(['clusterId', 'nodeId', 'listen', 'metricsListen', 'dataDir', 'peers', 'tickMs', 'electionTicks', 'heartbeatTicks', 'snapshotEntries', 'logLevel']);
  for (const k of Object.keys(o)) if (!known.has(k)) throw new ConfigError(file, `unknown key "${k}" (known keys: ${[...known].join(', ')})`);

  const str = (key: string, pattern: RegExp | null, form: string): string => {
    const v = o[key];
    if (v === undefined) throw new ConfigError(file, `missing "${key}": expected ${form}`);
    if (typeof v !== 'string' || (pattern && !pattern.test(v))) throw new ConfigError(file, `"${key}" is ${JSON.stringify(v)}: expected ${form}`);
    return v;
  };
  const int = (key: string, def: number, min: number, max: number): number => {
    const v = o[key];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new ConfigError(file, `"${key}" is ${JSON.stringify(v)}: expected an integer from ${min} to ${max}`);
    return v;
  };

  const clusterId = str('clusterId', ID, 'an id of letters, digits, ".", "_" or "-" (at most 64)');
  const nodeId = str('nodeId', ID, 'an id of letters, digits, ".", "_" or "-" (at most 64)');
  const listen = str('listen', ADDRESS, 'host:port, e.g. "127.0.0.1:7001"');
  if (!parseAddress(listen)) throw new ConfigError(file, `"listen" is ${JSON.stringify(listen)}: the port must be 1–65535`);
  let metricsListen: string | null = null;
  if (o.metricsListen !== undefined) {
    metricsListen = str('metricsListen', ADDRESS, 'host:port for the Prometheus endpoint, e.g. "127.0.0.1:9101"');
    if (!parseAddress(metricsListen)) throw new ConfigError(file, `"metricsListen" is ${JSON.stringify(metricsListen)}: the port must be 1–65535`);
    if (metricsListen === listen) throw new ConfigError(file, `"metricsListen" and "listen" are both ${listen}: give the metrics endpoint a port of its own`);
  }
  const dataDirRaw = str('dataDir', /\S/, 'a directory path');
  const dataDir = isAbsolute(dataDirRaw) ? dataDirRaw : resolve(dirname(resolve(file)), dataDirRaw);

  const p = o.peers;
  if (p === undefined) throw new ConfigError(file, 'missing "peers": expected an object of node id → "host:port", this node included');
  if (typeof p !== 'object' || p === null || Array.isArray(p)) throw new ConfigError(file, '"peers" must be an object of node id → "host:port"');
  const peers = new Map<string, string>();
  for (const [id, addr] of Object.entries(p as Record<string, unknown>)) {
    if (!ID.test(id)) throw new ConfigError(file, `"peers" has an invalid node id ${JSON.stringify(id)}`);
    if (typeof addr !== 'string' || !parseAddress(addr)) throw new ConfigError(file, `"peers.${id}" is ${JSON.stringify(addr)}: expected host:port`);
    peers.set(id, addr);
  }
  if (!peers.has(nodeId)) throw new ConfigError(file, `"peers" must include this node "${nodeId}": add "${nodeId}": "${listen}" (every voter, this node included)`);
  const seen = new Map<string, string>();
  for (const [id, addr] of peers) {
    const other = seen.get(addr);
    if (other) throw new ConfigError(file, `"peers.${id}" and "peers.${other}" share the address ${addr}`);
    seen.set(addr, id);
  }

  const tickMs = int('tickMs', 100, 1, 60_000);
  const electionTicks = int('electionTicks', 10, 2, 10_000);
  const heartbeatTicks = int('heartbeatTicks', 1, 1, 10_000);
  if (heartbeatTicks >= electionTicks) throw new ConfigError(file, `"heartbeatTicks" (${heartbeatTicks}) must be smaller than "electionTicks" (${electionTicks})`);
  const snapshotEntries = int('snapshotEntries', 10_000, 1, 100_000_000);
  const logLevel = o.logLevel ?? 'info';
  if (typeof logLevel !== 'string' || !(LEVELS as readonly string[]).includes(logLevel)) throw new ConfigError(file, `"logLevel" is ${JSON.stringify(logLevel)}: expected one of ${LEVELS.join(', ')}`);

  return { file, clusterId, nodeId, listen, metricsListen, dataDir, peers, tickMs, electionTicks, heartbeatTicks, snapshotEntries, logLevel: logLevel as NodeConfig['logLevel'] };
}
