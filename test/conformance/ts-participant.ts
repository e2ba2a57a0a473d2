// The TypeScript participants as processes for the conformance suite: the
// runtime of src/participant (startParticipant) with one resource, memory,
// TCC over memory, PostgreSQL or MySQL/MariaDB, exactly as an application
// runs it. Beside it, for memory and TCC, a probe on --probe answers
// GET /value/<key> with the committed value, so the suite can check what was
// applied; the database targets are read with SQL instead.
//
//   node --import tsx test/conformance/ts-participant.ts --resource memory|tcc|postgres|mysql
//     --id ID --cluster-id C --nodes H:P,... --listen H:P --data DIR [--probe H:P]
//     [--tls CA,CERT,KEY] [--url DATABASE-URL]
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { startParticipant, type ParticipantOptions } from '../../src/participant/runtime.ts';
import { TccRefusal, type TccBranch } from '../../src/participant/tcc/barrier.ts';
import type { TccMemoryHandlers } from '../../src/participant/tcc/memory.ts';
import type { MemoryResource } from '../../src/participant/memory.ts';

const { values: a } = parseArgs({
  options: {
    resource: { type: 'string' },
    id: { type: 'string' },
    'cluster-id': { type: 'string' },
    nodes: { type: 'string' },
    listen: { type: 'string' },
    data: { type: 'string' },
    probe: { type: 'string' },
    tls: { type: 'string' },
    url: { type: 'string' },
  },
});

/**
 * The TCC application of the suite: a key/value store whose Try reserves the keys of {"set": {...}}, Confirm writes
 * them, Cancel drops them.
 */
interface Kv {
  values: Record<string, string>;
  held: Record<string, Record<string, string>>;
}
let live: Kv | null = null;
const writesOf = (b: TccBranch): Record<string, string> => {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder().decode(b.payload));
  } catch {
    throw new TccRefusal('the payload is not JSON of the form {"set": {key: value}}');
  }
  const set = (v as { set?: unknown } | null)?.set;
  if (typeof set !== 'object' || set === null) throw new TccRefusal('the payload has no "set" object');
  return set as Record<string, string>;
};
const kvHandlers: TccMemoryHandlers<Kv> = {
  initial: () => (live = { values: {}, held: {} }),
  try(s, b) {
    const writes = writesOf(b);
    for (const [t, held] of Object.entries(s.held))
      for (const k of Object.keys(writes)) if (k in held) throw new TccRefusal(`key ${k} is reserved by ${t}`);
    s.held[b.txnId] = writes;
    return undefined;
  },
  confirm(s, b) {
    Object.assign(s.values, s.held[b.txnId] ?? {});
    delete s.held[b.txnId];
  },
  cancel(s, b) {
    delete s.held[b.txnId];
  },
  encode: (s) => JSON.stringify(s),
  decode: (t) => (live = JSON.parse(t) as Kv),
};

const tls = a.tls?.split(',');
const resource = a.resource ?? 'memory';
const options: ParticipantOptions = {
  clusterId: a['cluster-id'] ?? '',
  participantId: a.id ?? '',
  listen: a.listen ?? '',
  endpointsOfCluster: (a.nodes ?? '').split(','),
  dataDir: a.data ?? '',
  logger: pino({ level: process.env.VERDICT_CONFORMANCE_LOG_LEVEL ?? 'warn' }, pino.destination(2)),
  registerRetryMs: 100,
  ...(tls ? { tls: { ca: tls[0], cert: tls[1], key: tls[2] } } : { insecure: true }),
  ...(resource === 'tcc' ? { tcc: { memory: kvHandlers as TccMemoryHandlers<unknown> } } : {}),
  ...(resource === 'postgres' ? { postgres: { url: a.url ?? '' } } : {}),
  ...(resource === 'mysql' ? { mysql: { url: a.url ?? '' } } : {}),
};
const runtime = await startParticipant(options);

if (a.probe !== undefined) {
  const read = (key: string): string | undefined =>
    resource === 'tcc' ? live?.values[key] : (runtime.resource as MemoryResource).get(key);
  const [host, port] = [
    a.probe.slice(0, a.probe.lastIndexOf(':')),
    Number(a.probe.slice(a.probe.lastIndexOf(':') + 1)),
  ];
  createServer((req, res) => {
    const m = /^\/value\/(.+)$/.exec(req.url ?? '');
    const v = m ? read(decodeURIComponent(m[1])) : undefined;
    res.writeHead(v === undefined ? 404 : 200).end(v ?? '');
  }).listen(port, host);
}
await runtime.registered;
process.stdout.write(`${JSON.stringify({ event: 'ready', address: runtime.address })}\n`);
for (const s of ['SIGTERM', 'SIGINT'] as const) process.once(s, () => void runtime.stop().then(() => process.exit(0)));
