// Where a node's configuration comes from: one JSON file, then environment
// variables, then `--set key=value` flags, each overriding the one before
// (flags > environment > file). This file merges the three into one raw
// object and remembers where every key came from, so that config.ts can
// name the source in each error.
//
// Naming rule. A key is a path into the JSON object: `tickMs`, `tls.cert`,
// `peers.n2`. Its environment variable is VERDICT_ followed by the path in
// upper snake case, dots becoming underscores: VERDICT_TICK_MS,
// VERDICT_TLS_CERT, VERDICT_TLS_ADMIN_NAMES. Values are text: integers as
// digits, booleans as true or false, lists comma-separated (`tls.adminNames=alice,bob`), maps as
// comma-separated id=host:port (`peers=n1=127.0.0.1:7001,n2=...`); one map
// entry can be set with its own path (`--set peers.n4=127.0.0.1:7004`, flags
// only). An empty value removes the key, so its default applies. Relative
// paths from the environment or a flag are relative to the working
// directory; in the file, to the file's folder.

export type ValueKind = 'string' | 'int' | 'bool' | 'list' | 'map';

/** Every key that can be overridden, with the form its text takes. */
export const OVERRIDABLE: Readonly<Record<string, ValueKind>> = {
  clusterId: 'string',
  nodeId: 'string',
  listen: 'string',
  metricsListen: 'string',
  consoleListen: 'string',
  consoleHosts: 'list',
  dataDir: 'string',
  peers: 'map',
  peerDial: 'map',
  tickMs: 'int',
  electionTicks: 'int',
  heartbeatTicks: 'int',
  snapshotEntries: 'int',
  snapshotLogRatio: 'int',
  logLevel: 'string',
  join: 'bool',
  groups: 'int',
  spreadLeaders: 'bool',
  insecure: 'bool',
  requestBytesMax: 'int',
  inFlightMax: 'int',
  clientInFlightMax: 'int',
  streamUnreadMax: 'int',
  sagaStuckAfterAttempts: 'int',
  sagaActionAttemptsMax: 'int',
  sagaClientRunningMax: 'int',
  sagaActionAbandonAfterMs: 'int',
  sagaCallTimeoutMs: 'int',
  sagaRetryMinMs: 'int',
  sagaRetryMaxMs: 'int',
  sagaStuckLogIntervalMs: 'int',
  parallelCommit: 'bool',
  explicitCommitLingerMs: 'int',
  commitNoticeMs: 'int',
  decisionLingerMs: 'int',
  otlpEndpoint: 'string',
  history: 'bool',
  historyRetentionMs: 'int',
  historyBytesMax: 'int',
  'tls.ca': 'string',
  'tls.cert': 'string',
  'tls.key': 'string',
  'tls.adminNames': 'list',
};

/** Keys whose entries may be set one by one (`peers.n4=...`). */
const MAPS = new Set(Object.keys(OVERRIDABLE).filter((k) => OVERRIDABLE[k] === 'map'));

export type Source = { kind: 'file' } | { kind: 'env'; name: string } | { kind: 'flag'; text: string };

/** The environment variable for a key path: tls.adminNames → VERDICT_TLS_ADMIN_NAMES. */
export function envName(path: string): string {
  return `VERDICT_${path
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/\./g, '_')
    .toUpperCase()}`;
}

/** " (from VERDICT_X)" / " (from --set x=...)" / "" for the file, to follow a key's name in a message. */
export function describeSource(s: Source | undefined): string {
  if (s === undefined || s.kind === 'file') return '';
  return s.kind === 'env' ? ` (from environment variable ${s.name})` : ` (from --set ${s.text})`;
}

export class OverrideError extends Error {}

export interface Merged {
  raw: Record<string, unknown>;
  /** Key path → where its value came from; keys absent here came from the file. */
  sources: Map<string, Source>;
}

/**
 * Applies environment variables, then `--set` flags, on top of the file's
 * object (which is not modified). Throws OverrideError for a flag that is
 * not key=value, an unknown key, or a map value that is not id=host:port.
 */
export function mergeOverrides(
  fileRaw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
  sets: readonly string[],
): Merged {
  const raw: Record<string, unknown> = { ...fileRaw };
  for (const [k, v] of Object.entries(raw)) if (isObject(v)) raw[k] = { ...v };
  const sources = new Map<string, Source>();
  for (const path of Object.keys(OVERRIDABLE)) {
    const name = envName(path);
    const text = env[name];
    if (text !== undefined) apply(raw, sources, path, text, { kind: 'env', name });
  }
  for (const s of sets) {
    const eq = s.indexOf('=');
    if (eq <= 0)
      throw new OverrideError(
        `--set ${JSON.stringify(s)} is not KEY=VALUE (e.g. --set tickMs=50, --set tls.cert=certs/n1.crt)`,
      );
    const path = s.slice(0, eq);
    const text = s.slice(eq + 1);
    const source: Source = { kind: 'flag', text: s };
    const dot = path.indexOf('.');
    if (dot > 0 && MAPS.has(path.slice(0, dot))) {
      setEntry(raw, sources, path.slice(0, dot), path.slice(dot + 1), text, source);
      continue;
    }
    if (OVERRIDABLE[path] === undefined)
      throw new OverrideError(
        `--set ${s}: unknown key "${path}" (keys: ${Object.keys(OVERRIDABLE).join(', ')}; one map entry: peers.ID, peerDial.ID)`,
      );
    apply(raw, sources, path, text, source);
  }
  return { raw, sources };
}

function apply(
  raw: Record<string, unknown>,
  sources: Map<string, Source>,
  path: string,
  text: string,
  source: Source,
): void {
  const [head, sub] = path.split('.') as [string, string | undefined];
  const parent: Record<string, unknown> = sub === undefined ? raw : ensureObject(raw, head);
  const key = sub ?? head;
  sources.set(path, source);
  if (text === '') {
    delete parent[key];
    return;
  }
  parent[key] = convert(path, text, source);
}

function setEntry(
  raw: Record<string, unknown>,
  sources: Map<string, Source>,
  map: string,
  id: string,
  text: string,
  source: Source,
): void {
  const m = ensureObject(raw, map);
  sources.set(`${map}.${id}`, source);
  if (text === '') delete m[id];
  else m[id] = text;
}

/**
 * Text → the JSON value the file would hold. A number that does not parse stays text, for the validator to refuse with
 * the key's expected form.
 */
function convert(path: string, text: string, source: Source): unknown {
  switch (OVERRIDABLE[path]) {
    case 'int':
      return /^[+-]?\d+$/.test(text.trim()) ? Number(text.trim()) : text;
    case 'bool':
      return text === 'true' ? true : text === 'false' ? false : text;
    case 'list':
      return text
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
    case 'map': {
      const out: Record<string, string> = {};
      for (const item of text
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '')) {
        const eq = item.indexOf('=');
        if (eq <= 0)
          throw new OverrideError(
            `"${path}"${describeSource(source)}: ${JSON.stringify(item)} is not ID=HOST:PORT; expected a comma-separated list such as n1=127.0.0.1:7001,n2=127.0.0.1:7002`,
          );
        out[item.slice(0, eq)] = item.slice(eq + 1);
      }
      return out;
    }
    default:
      return text;
  }
}

function ensureObject(raw: Record<string, unknown>, key: string): Record<string, unknown> {
  const v = raw[key];
  if (isObject(v)) return v;
  // A file value of the wrong type is replaced: the override is the value that counts.
  const fresh: Record<string, unknown> = {};
  raw[key] = fresh;
  return fresh;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
