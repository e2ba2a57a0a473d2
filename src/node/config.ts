// A node's configuration: a JSON file, overridden by environment variables
// and `--set key=value` flags (see config-sources.ts for the precedence and
// the naming rule), validated before anything else runs. Every error is one
// line naming the key, where its value came from and the expected form.

import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { COMMIT_NOTICE_MS_DEFAULT } from './driver.ts';
import { REQUEST_BYTES_MAX_DEFAULT } from '../transport/validate.ts';
import { ANSWER_STREAM_UNREAD_MAX } from '../transport/request-stream.ts';
import { checkAddresses } from './config-addresses.ts';
import { defaultEngineConfig } from '../commit/engine-types.ts';
import { describeSource, envName, mergeOverrides, OverrideError, type Source } from './config-sources.ts';
import { ID } from '../domain/id.ts';
import { GROUPS_MAX } from '../domain/group.ts';
import { HISTORY_BYTES_MAX_DEFAULT, HISTORY_RETENTION_MS_DEFAULT } from '../history/record.ts';

export interface NodeConfig {
  /** The file this came from, for error messages; "(no file)" when every key came from the environment and flags. */
  file: string;
  clusterId: string;
  nodeId: string;
  /** host:port where this node serves peers and clients. */
  listen: string;
  /** host:port of the Prometheus HTTP endpoint (GET /metrics); null: none. */
  metricsListen: string | null;
  /**
   * host:port of the web console (src/console/): HTTPS with mutual TLS when `tls` is set, plain HTTP otherwise; null:
   * none of its own (it is also on metricsListen).
   */
  consoleListen: string | null;
  /**
   * Host names the console answers to besides its own (localhost and the
   * hosts of listen, metricsListen, consoleListen and the peers): a DNS name
   * or a reverse proxy's, lower case. Any other name in a request's Host is
   * refused (DNS rebinding, src/console/api.ts).
   */
  consoleHosts: string[];
  /** Absolute path of the data directory (resolved against the config file's folder). */
  dataDir: string;
  /**
   * The members of the cluster, this node included: id → host:port. The file
   * gives the seed membership (or, with `join`, where the cluster is); once
   * a membership change is applied, the node keeps this map equal to the
   * replicated membership (src/node/node.ts).
   */
  peers: Map<string, string>;
  /**
   * A new node joining a running cluster (`verdict member add`): it starts
   * with no membership, never campaigns, and waits for the leader's log or
   * snapshot. Only for an empty data directory; false by default.
   */
  join: boolean;
  /**
   * The cluster's number of decision groups (docs/architecture.md, "Decision
   * groups"), 1 by default: fixed when the cluster is founded (`verdict
   * cluster init --groups`) and recorded in the data directory, which a node
   * with another number refuses to open.
   */
  groups: number;
  /**
   * With more than one decision group: each group's leader is handed to its preferred node (g mod N of the sorted
   * voters), and back to a node that returns (docs/operations.md, "Decision groups"). True by default; no effect with
   * one group.
   */
  spreadLeaders: boolean;
  /**
   * Where this node connects to reach a peer for Raft traffic, when that is
   * not the peer's address in `peers` (a proxy, a tunnel): id → host:port.
   * Clients and participants are still told the addresses in `peers`.
   */
  peerDial: Map<string, string>;
  tickMs: number;
  electionTicks: number;
  heartbeatTicks: number;
  snapshotEntries: number;
  /** A snapshot also waits until the log since the last one holds this many times its bytes; 0: by count only. */
  snapshotLogRatio: number;
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
  /** TLS for every connection of this node (src/transport/tls.ts); null: plaintext. */
  tls: NodeTlsConfig | null;
  /**
   * Serve plaintext: without TLS a node starts only with this
   * (src/transport/listen-policy.ts), on every listener, loopback included,
   * and warns at every start. False by default: plaintext trusts everyone
   * who can reach the port.
   */
  insecure: boolean;
  /** Largest request message on the client-facing services, in bytes (docs/limits.md). */
  requestBytesMax: number;
  /** Undecided transactions the leader holds at once, all clients together. */
  inFlightMax: number;
  /** Undecided transactions one client (certificate CN, or connection) may hold. */
  clientInFlightMax: number;
  /** Answers a commit stream may hold unread by its client before it is cut off. */
  streamUnreadMax: number;
  /** Sagas (docs/sagas.md): a call retried this many times flags its saga stuck; it keeps retrying. */
  sagaStuckAfterAttempts: number;
  /** Sagas: an action at or before the pivot that errored this many times is abandoned and compensated. */
  sagaActionAttemptsMax: number;
  /** Sagas one client may have running at once (docs/limits.md). */
  sagaClientRunningMax: number;
  /**
   * Sagas: ... and not before this long (ms) after the action's first failure, to ride out a step service's restart.
   */
  sagaActionAbandonAfterMs: number;
  /** Sagas: how long one step call may take before it counts as a failed attempt (ms). */
  sagaCallTimeoutMs: number;
  /**
   * Sagas: the backoff between attempts of one call starts here (ms), doubles per attempt up to sagaRetryMaxMs, with
   * jitter down to half.
   */
  sagaRetryMinMs: number;
  sagaRetryMaxMs: number;
  /** Sagas: the leader repeats a stuck saga's warn line at most this often (ms), per saga. */
  sagaStuckLogIntervalMs: number;
  /** Parallel commit for transactions that do not choose (docs/protocol.md, "Parallel commit"). */
  parallelCommit: boolean;
  /** How long an explicit COMMIT after an implied COMMITTED may wait to share a log entry (ms; 0: never waits). */
  explicitCommitLingerMs: number;
  /**
   * Leader: how long a moved commit index may wait for the next append or heartbeat to carry it to the followers (ms;
   * 0: an append of its own at once).
   */
  commitNoticeMs: number;
  /**
   * Leader: how long a DECISION may wait for the next PREPARE to the same participant, to share its message (ms; 0:
   * sent at once).
   */
  decisionLingerMs: number;
  /**
   * OTLP/HTTP endpoint for this node's spans (docs/operations.md, "Tracing"),
   * e.g. http://127.0.0.1:4318; null: tracing off. When the key is absent,
   * OTEL_EXPORTER_OTLP_ENDPOINT is read at start (src/transport/tracing.ts).
   */
  otlpEndpoint: string | null;
  /** The transaction history in the data directory (docs/operations.md, "Transaction history"). */
  history: boolean;
  /** History records older than this are deleted (ms). */
  historyRetentionMs: number;
  /** The history's records keep at most this many bytes; the oldest go first. */
  historyBytesMax: number;
}

export interface NodeTlsConfig {
  /** Absolute paths of PEM files: the cluster's CA, this node's certificate (CN=nodeId, OU=clusterId) and key. */
  ca: string;
  cert: string;
  key: string;
  /**
   * Client certificate CNs allowed to run admin operations; null: not configured, so nobody may
   * (src/transport/auth.ts).
   */
  adminNames: string[] | null;
}

/** Where a config's values come from besides the file. */
export interface ConfigOverrides {
  /** Environment variables (VERDICT_*); usually process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  /** `--set key=value` flags, in order. */
  sets?: readonly string[];
}

export const NO_FILE = '(no file)';
/**
 * A DECISION waits at most this long to ride the next PREPARE to its participant (about a millisecond later at one
 * transaction at a time).
 */
export const DECISION_LINGER_MS_DEFAULT = 2;

export class ConfigError extends Error {
  constructor(file: string, what: string) {
    super(`config ${file}: ${what}`);
    this.name = 'ConfigError';
  }
}

const ADDRESS = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export function parseAddress(s: string): { host: string; port: number } | null {
  const m = ADDRESS.exec(s);
  if (!m) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1], port };
}

/**
 * Reads the file (when given), applies the overrides and validates. Without
 * a file, every required key must come from the environment or flags.
 */
export function loadConfig(file: string | undefined, overrides: ConfigOverrides = {}): NodeConfig {
  if (file === undefined) return parseConfig({}, NO_FILE, overrides);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      file,
      `cannot read the file (${(err as NodeJS.ErrnoException).code ?? String(err)}); pass --config with the path of a node's JSON config, e.g. cluster/n1.json`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(
      file,
      `not valid JSON (${(err as Error).message}); fix the syntax — cluster/n1.json shows the expected form`,
    );
  }
  return parseConfig(raw, file, overrides);
}

const KNOWN = [
  'clusterId',
  'nodeId',
  'listen',
  'metricsListen',
  'consoleListen',
  'consoleHosts',
  'dataDir',
  'peers',
  'peerDial',
  'tickMs',
  'electionTicks',
  'heartbeatTicks',
  'snapshotEntries',
  'snapshotLogRatio',
  'logLevel',
  'tls',
  'join',
  'groups',
  'spreadLeaders',
  'insecure',
  'requestBytesMax',
  'inFlightMax',
  'clientInFlightMax',
  'streamUnreadMax',
  'sagaStuckAfterAttempts',
  'sagaActionAttemptsMax',
  'sagaClientRunningMax',
  'sagaActionAbandonAfterMs',
  'sagaCallTimeoutMs',
  'sagaRetryMinMs',
  'sagaRetryMaxMs',
  'sagaStuckLogIntervalMs',
  'parallelCommit',
  'explicitCommitLingerMs',
  'commitNoticeMs',
  'decisionLingerMs',
  'otlpEndpoint',
  'history',
  'historyRetentionMs',
  'historyBytesMax',
];
const TLS_KNOWN = ['ca', 'cert', 'key', 'adminNames'];
const HOST_NAMES_MAX = 32;
/** A DNS name: labels of letters, digits and "-", dot-separated, at most 253 characters. */
const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const ADMIN_NAMES_MAX = 256;

export function parseConfig(fileRaw: unknown, file: string, overrides: ConfigOverrides = {}): NodeConfig {
  if (typeof fileRaw !== 'object' || fileRaw === null || Array.isArray(fileRaw))
    throw new ConfigError(file, 'expected a JSON object');
  let o: Record<string, unknown>;
  let sources: Map<string, Source>;
  try {
    ({ raw: o, sources } = mergeOverrides(
      fileRaw as Record<string, unknown>,
      overrides.env ?? {},
      overrides.sets ?? [],
    ));
  } catch (err) {
    if (err instanceof OverrideError) throw new ConfigError(file, err.message);
    throw err;
  }
  const known = new Set(KNOWN);
  for (const k of Object.keys(o))
    if (!known.has(k)) throw new ConfigError(file, `unknown key "${k}" (known keys: ${[...known].join(', ')})`);

  /**
   * A key's name as the user wrote it, with where its value came from when not the file: "tickMs" (from environment
   * variable VERDICT_TICK_MS).
   */
  const label = (path: string): string => {
    const dot = path.indexOf('.');
    return `"${path}"${describeSource(sources.get(path) ?? (dot > 0 ? sources.get(path.slice(0, dot)) : undefined))}`;
  };
  /**
   * Relative paths from the file are relative to its folder; from the environment or a flag, to the working directory.
   */
  const absolute = (path: string, value: string): string => {
    if (isAbsolute(value)) return value;
    const fromFile = sources.get(path) === undefined && file !== NO_FILE;
    return fromFile ? resolve(dirname(resolve(file)), value) : resolve(value);
  };
  const missing = (path: string, form: string): ConfigError => {
    const where = file === NO_FILE ? ` (no --config file: set it with ${envName(path)} or --set ${path}=...)` : '';
    return new ConfigError(file, `missing ${label(path)}: expected ${form}${where}`);
  };
  const strIn = (
    obj: Record<string, unknown>,
    path: string,
    key: string,
    pattern: RegExp | null,
    form: string,
  ): string => {
    const v = obj[key];
    if (v === undefined) throw missing(path, form);
    if (typeof v !== 'string' || (pattern && !pattern.test(v)))
      throw new ConfigError(file, `${label(path)} is ${JSON.stringify(v)}: expected ${form}`);
    return v;
  };
  const str = (key: string, pattern: RegExp | null, form: string): string => strIn(o, key, key, pattern, form);
  /** A list of DNS host names, lower-cased. */
  const hostNames = (key: string): string[] => {
    const v = o[key] ?? [];
    const form = `a list of host names, e.g. ["verdict.example.com"], at most ${HOST_NAMES_MAX}`;
    if (!Array.isArray(v) || v.length > HOST_NAMES_MAX || v.some((x) => typeof x !== 'string' || !HOST_NAME.test(x)))
      throw new ConfigError(file, `${label(key)} is ${JSON.stringify(o[key])}: expected ${form}`);
    return (v as string[]).map((x) => x.toLowerCase());
  };
  const int = (key: string, def: number, min: number, max: number): number => {
    const v = o[key];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      throw new ConfigError(file, `${label(key)} is ${JSON.stringify(v)}: expected an integer from ${min} to ${max}`);
    return v;
  };

  const clusterId = str('clusterId', ID, 'an id of letters, digits, ".", "_" or "-" (at most 64)');
  const nodeId = str('nodeId', ID, 'an id of letters, digits, ".", "_" or "-" (at most 64)');
  const listen = str('listen', ADDRESS, 'host:port, e.g. "127.0.0.1:7001"');
  if (!parseAddress(listen))
    throw new ConfigError(file, `${label('listen')} is ${JSON.stringify(listen)}: the port must be 1–65535`);
  let metricsListen: string | null = null;
  if (o.metricsListen !== undefined) {
    metricsListen = str('metricsListen', ADDRESS, 'host:port for the Prometheus endpoint, e.g. "127.0.0.1:9101"');
    if (!parseAddress(metricsListen))
      throw new ConfigError(
        file,
        `${label('metricsListen')} is ${JSON.stringify(metricsListen)}: the port must be 1–65535`,
      );
    if (metricsListen === listen)
      throw new ConfigError(
        file,
        `${label('metricsListen')} and ${label('listen')} are both ${listen}: give the metrics endpoint a port of its own`,
      );
  }
  let consoleListen: string | null = null;
  if (o.consoleListen !== undefined) {
    consoleListen = str('consoleListen', ADDRESS, 'host:port for the web console, e.g. "127.0.0.1:9201"');
    if (!parseAddress(consoleListen))
      throw new ConfigError(
        file,
        `${label('consoleListen')} is ${JSON.stringify(consoleListen)}: the port must be 1–65535`,
      );
    if (consoleListen === listen || consoleListen === metricsListen)
      throw new ConfigError(
        file,
        `${label('consoleListen')} is ${consoleListen}, the address of ${consoleListen === listen ? label('listen') : label('metricsListen')}: give the console a port of its own`,
      );
  }
  const consoleHosts = hostNames('consoleHosts');
  const dataDir = absolute('dataDir', str('dataDir', /\S/, 'a directory path'));

  const p = o.peers;
  if (p === undefined) throw missing('peers', 'an object of node id → "host:port", this node included');
  if (typeof p !== 'object' || p === null || Array.isArray(p))
    throw new ConfigError(file, `${label('peers')} must be an object of node id → "host:port"`);
  const peers = new Map<string, string>();
  for (const [id, addr] of Object.entries(p as Record<string, unknown>)) {
    if (!ID.test(id)) throw new ConfigError(file, `${label('peers')} has an invalid node id ${JSON.stringify(id)}`);
    if (typeof addr !== 'string' || !parseAddress(addr))
      throw new ConfigError(file, `${label(`peers.${id}`)} is ${JSON.stringify(addr)}: expected host:port`);
    peers.set(id, addr);
  }
  if (!peers.has(nodeId))
    throw new ConfigError(
      file,
      `${label('peers')} must include this node "${nodeId}": add "${nodeId}": "${listen}" (every voter, this node included)`,
    );
  const seen = new Map<string, string>();
  for (const [id, addr] of peers) {
    const other = seen.get(addr);
    if (other)
      throw new ConfigError(file, `${label(`peers.${id}`)} and ${label(`peers.${other}`)} share the address ${addr}`);
    seen.set(addr, id);
  }

  const peerDial = new Map<string, string>();
  const pd = o.peerDial;
  if (pd !== undefined) {
    if (typeof pd !== 'object' || pd === null || Array.isArray(pd))
      throw new ConfigError(
        file,
        `${label('peerDial')} must be an object of peer id → "host:port" (where this node connects to reach that peer)`,
      );
    for (const [id, addr] of Object.entries(pd as Record<string, unknown>)) {
      if (!peers.has(id) || id === nodeId)
        throw new ConfigError(
          file,
          `${label(`peerDial.${id}`)}: "${id}" is not another voter in "peers" (${[...peers.keys()].filter((x) => x !== nodeId).join(', ')})`,
        );
      if (typeof addr !== 'string' || !parseAddress(addr))
        throw new ConfigError(file, `${label(`peerDial.${id}`)} is ${JSON.stringify(addr)}: expected host:port`);
      peerDial.set(id, addr);
    }
  }

  const tickMs = int('tickMs', 100, 1, 60_000);
  const electionTicks = int('electionTicks', 10, 2, 10_000);
  const heartbeatTicks = int('heartbeatTicks', 1, 1, 10_000);
  if (heartbeatTicks >= electionTicks)
    throw new ConfigError(
      file,
      `${label('heartbeatTicks')} (${heartbeatTicks}) must be smaller than ${label('electionTicks')} (${electionTicks})`,
    );
  const snapshotEntries = int('snapshotEntries', 10_000, 1, 100_000_000);
  const groups = int('groups', 1, 1, GROUPS_MAX);
  const snapshotLogRatio = int('snapshotLogRatio', 1, 0, 1_000);
  // The Raft transport's own bound (64 MiB) caps a request too: the node serves both on one port.
  const requestBytesMax = int('requestBytesMax', REQUEST_BYTES_MAX_DEFAULT, 1024, 64 * 1024 * 1024);
  const inFlightMax = int('inFlightMax', 10_000, 1, 1_000_000);
  const clientInFlightMax = int('clientInFlightMax', 1_000, 1, 1_000_000);
  const streamUnreadMax = int('streamUnreadMax', ANSWER_STREAM_UNREAD_MAX, 16, 1_000_000);
  const sagaStuckAfterAttempts = int('sagaStuckAfterAttempts', 10, 1, 1_000_000);
  const sagaActionAttemptsMax = int('sagaActionAttemptsMax', 5, 1, 1_000_000);
  const sagaClientRunningMax = int('sagaClientRunningMax', 1_000, 1, 10_000);
  const sagaActionAbandonAfterMs = int('sagaActionAbandonAfterMs', 30_000, 0, 86_400_000);
  const sagaCallTimeoutMs = int('sagaCallTimeoutMs', 10_000, 100, 3_600_000);
  const sagaRetryMinMs = int('sagaRetryMinMs', 100, 1, 3_600_000);
  const sagaRetryMaxMs = int('sagaRetryMaxMs', 10_000, 1, 3_600_000);
  const sagaStuckLogIntervalMs = int('sagaStuckLogIntervalMs', 60_000, 1_000, 86_400_000);
  if (sagaRetryMinMs > sagaRetryMaxMs)
    throw new ConfigError(
      file,
      `${label('sagaRetryMinMs')} (${sagaRetryMinMs}) must not exceed ${label('sagaRetryMaxMs')} (${sagaRetryMaxMs})`,
    );
  const explicitCommitLingerMs = int('explicitCommitLingerMs', defaultEngineConfig.explicitCommitLingerMs, 0, 1_000);
  const commitNoticeMs = int('commitNoticeMs', COMMIT_NOTICE_MS_DEFAULT, 0, 1_000);
  const decisionLingerMs = int('decisionLingerMs', DECISION_LINGER_MS_DEFAULT, 0, 1_000);
  const historyRetentionMs = int('historyRetentionMs', HISTORY_RETENTION_MS_DEFAULT, 60_000, 366 * 24 * 3_600_000);
  const historyBytesMax = int('historyBytesMax', HISTORY_BYTES_MAX_DEFAULT, 1024 * 1024, 1024 ** 4);
  const history = o.history === 'true' ? true : o.history === 'false' ? false : (o.history ?? true);
  if (typeof history !== 'boolean')
    throw new ConfigError(
      file,
      `${label('history')} is ${JSON.stringify(history)}: expected true (keep the transaction history) or false`,
    );
  if (clientInFlightMax > inFlightMax)
    throw new ConfigError(
      file,
      `${label('clientInFlightMax')} (${clientInFlightMax}) must not exceed ${label('inFlightMax')} (${inFlightMax})`,
    );
  // From the environment or --set the value arrives as text.
  const join = o.join === 'true' ? true : o.join === 'false' ? false : (o.join ?? false);
  if (typeof join !== 'boolean')
    throw new ConfigError(
      file,
      `${label('join')} is ${JSON.stringify(join)}: expected true (a new node joining a running cluster) or false`,
    );
  const spreadLeaders =
    o.spreadLeaders === 'true' ? true : o.spreadLeaders === 'false' ? false : (o.spreadLeaders ?? true);
  if (typeof spreadLeaders !== 'boolean')
    throw new ConfigError(
      file,
      `${label('spreadLeaders')} is ${JSON.stringify(spreadLeaders)}: expected true (leaders spread over the nodes, the default) or false`,
    );
  const parallelCommit =
    o.parallelCommit === 'true' ? true : o.parallelCommit === 'false' ? false : (o.parallelCommit ?? true);
  if (typeof parallelCommit !== 'boolean')
    throw new ConfigError(
      file,
      `${label('parallelCommit')} is ${JSON.stringify(parallelCommit)}: expected true (parallel commit by default) or false (classic)`,
    );
  const insecure = o.insecure === 'true' ? true : o.insecure === 'false' ? false : (o.insecure ?? false);
  if (typeof insecure !== 'boolean')
    throw new ConfigError(
      file,
      `${label('insecure')} is ${JSON.stringify(insecure)}: expected true (serve plaintext without TLS, trusting everyone who can reach the port) or false`,
    );
  const otlpEndpoint = o.otlpEndpoint ?? null;
  if (otlpEndpoint !== null && (typeof otlpEndpoint !== 'string' || !/^https?:\/\/[^\s/]+(\/\S*)?$/.test(otlpEndpoint)))
    throw new ConfigError(
      file,
      `${label('otlpEndpoint')} is ${JSON.stringify(otlpEndpoint)}: expected an http:// or https:// URL of an OTLP/HTTP receiver, e.g. "http://127.0.0.1:4318"`,
    );
  const logLevel = o.logLevel ?? 'info';
  if (typeof logLevel !== 'string' || !(LEVELS as readonly string[]).includes(logLevel))
    throw new ConfigError(
      file,
      `${label('logLevel')} is ${JSON.stringify(logLevel)}: expected one of ${LEVELS.join(', ')}`,
    );

  let tls: NodeTlsConfig | null = null;
  if (o.tls !== undefined) {
    const t = o.tls;
    if (typeof t !== 'object' || t === null || Array.isArray(t))
      throw new ConfigError(
        file,
        `${label('tls')} must be an object { "ca": path, "cert": path, "key": path, "adminNames": [names] }`,
      );
    const to = t as Record<string, unknown>;
    for (const k of Object.keys(to))
      if (!TLS_KNOWN.includes(k))
        throw new ConfigError(
          file,
          `unknown key "tls.${k}" (known keys: ${TLS_KNOWN.map((x) => `tls.${x}`).join(', ')})`,
        );
    const path = (k: 'ca' | 'cert' | 'key', form: string): string =>
      absolute(`tls.${k}`, strIn(to, `tls.${k}`, k, /\S/, form));
    const ca = path('ca', "the path of the cluster CA's certificate (PEM)");
    const cert = path('cert', `the path of this node's certificate (PEM), with CN=${nodeId} and OU=${clusterId}`);
    const key = path('key', "the path of this node's private key (PEM)");
    let adminNames: string[] | null = null;
    if (to.adminNames !== undefined) {
      const a = to.adminNames;
      const form = `a list of client certificate common names (CN), e.g. ["ops-admin"], at most ${ADMIN_NAMES_MAX}`;
      if (!Array.isArray(a) || a.length > ADMIN_NAMES_MAX || a.some((x) => typeof x !== 'string' || x.trim() === ''))
        throw new ConfigError(file, `${label('tls.adminNames')} is ${JSON.stringify(a)}: expected ${form}`);
      adminNames = a as string[];
    }
    tls = { ca, cert, key, adminNames };
  }

  const addressProblem = checkAddresses(nodeId, listen, metricsListen, peers);
  if (addressProblem !== null)
    throw new ConfigError(
      file,
      addressProblem.replace(/\{(peers\.[^}]+|listen|metricsListen)\}/g, (_, k: string) => label(k)),
    );

  return {
    file,
    clusterId,
    nodeId,
    listen,
    metricsListen,
    consoleListen,
    consoleHosts,
    dataDir,
    peers,
    peerDial,
    tickMs,
    electionTicks,
    heartbeatTicks,
    snapshotEntries,
    snapshotLogRatio,
    logLevel: logLevel as NodeConfig['logLevel'],
    tls,
    join,
    groups,
    spreadLeaders,
    insecure,
    requestBytesMax,
    inFlightMax,
    parallelCommit,
    explicitCommitLingerMs,
    commitNoticeMs,
    decisionLingerMs,
    otlpEndpoint,
    history,
    historyRetentionMs,
    historyBytesMax,
    clientInFlightMax,
    streamUnreadMax,
    sagaStuckAfterAttempts,
    sagaActionAttemptsMax,
    sagaClientRunningMax,
    sagaActionAbandonAfterMs,
    sagaCallTimeoutMs,
    sagaRetryMinMs,
    sagaRetryMaxMs,
    sagaStuckLogIntervalMs,
  };
}
