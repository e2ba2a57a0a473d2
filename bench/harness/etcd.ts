// etcd 3.4 as an anchor for the raw replicated log: the same machine, the
// same run, the same disk, three members on loopback, measured with the same
// load generator (bench/harness/loadgen.ts, mode raw, system etcd) as Verdict's raw
// log: 100-byte values, one Put at a time and 64 in flight, sent to the
// leader over etcd's own v3 gRPC API (KV.Put, through a vendored subset of
// its rpc.proto, bench/harness/etcd/kv.proto) with grpc-js, the library Verdict's
// own clients use. docs/benchmarks.md says why gRPC and not the JSON gateway.
//
// The binary is Debian's `etcd-server` package; when it is missing and we
// run as root, `apt-get install -y etcd-server` installs it (after
// `apt-cache policy etcd-server` shows a candidate). Otherwise the anchor
// is skipped, with the reason in the results.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { freePorts, ROOT, spawnProgram, stopChild, waitFor, type Child } from './procs.ts';

const ETCD_BINARIES = ['/usr/bin/etcd', '/usr/local/bin/etcd'];
const PROTO = join(ROOT, 'bench', 'harness', 'etcd', 'kv.proto');

export interface EtcdBinary {
  path: string;
  version: string;
}

function run(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

function found(): EtcdBinary | null {
  for (const path of ETCD_BINARIES) {
    if (!existsSync(path)) continue;
    const version = /etcd Version: (\S+)/.exec(run(path, ['--version']))?.[1] ?? 'unknown';
    return { path, version };
  }
  return null;
}

/** The etcd binary, installed from Debian when missing and possible; a reason when not. */
export function ensureEtcd(log: (line: string) => void): EtcdBinary | { skipped: string } {
  const have = found();
  if (have !== null) return have;
  if (process.getuid?.() !== 0)
    return { skipped: 'etcd is not installed and installing it needs root: run `apt-get install -y etcd-server` once' };
  let policy = '';
  try {
    policy = run('apt-cache', ['policy', 'etcd-server']);
  } catch (err) {
    return { skipped: `etcd is not installed and apt-cache failed: ${(err as Error).message.split('\n')[0]}` };
  }
  const candidate = /Candidate:\s*(\S+)/.exec(policy)?.[1];
  if (candidate === undefined || candidate === '(none)')
    return { skipped: 'etcd is not installed and apt has no candidate for etcd-server (run apt-get update?)' };
  log(`bench: installing etcd-server ${candidate} from apt (the etcd anchor)`);
  try {
    run('apt-get', ['install', '-y', 'etcd-server']);
  } catch (err) {
    return { skipped: `apt-get install -y etcd-server failed: ${(err as Error).message.split('\n')[0]}` };
  }
  return found() ?? { skipped: 'etcd-server installed, but no etcd binary was found' };
}

interface EtcdStatus {
  header: { memberId: string } | null;
  leader: string;
  version: string;
}

type Unary<Req, Res> = (
  req: Req,
  options: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res?: Res) => void,
) => void;
interface KvClient extends grpc.Client {
  Put: Unary<{ key: Uint8Array; value: Uint8Array }, { header: { revision: string } | null }>;
}
interface MaintenanceClient extends grpc.Client {
  Status: Unary<Record<string, never>, EtcdStatus>;
}

const pkg = (): grpc.GrpcObject => {
  const def = protoLoader.loadSync(PROTO, { keepCase: false, longs: String, enums: String, defaults: true });
  return grpc.loadPackageDefinition(def).etcdserverpb as grpc.GrpcObject;
};

/** A Put client for one etcd member's gRPC endpoint (host:port). */
export class EtcdKv {
  private readonly kv: KvClient;

  constructor(address: string) {
    const Kv = pkg().KV as unknown as new (address: string, creds: grpc.ChannelCredentials) => KvClient;
    this.kv = new Kv(address, grpc.credentials.createInsecure());
  }

  put(key: string, value: Uint8Array, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.kv.Put({ key: Buffer.from(key), value }, { deadline: Date.now() + timeoutMs }, (err) =>
        err ? reject(err) : resolve(),
      );
    });
  }

  close(): void {
    this.kv.close();
  }
}

function status(address: string, timeoutMs: number): Promise<EtcdStatus> {
  const M = pkg().Maintenance as unknown as new (address: string, creds: grpc.ChannelCredentials) => MaintenanceClient;
  const c = new M(address, grpc.credentials.createInsecure());
  return new Promise<EtcdStatus>((resolve, reject) => {
    c.Status({}, { deadline: Date.now() + timeoutMs }, (err, res) =>
      err || !res ? reject(err ?? new Error('empty status')) : resolve(res),
    );
  }).finally(() => c.close());
}

export class EtcdCluster {
  private constructor(
    readonly members: { name: string; client: string; child: Child }[],
    readonly version: string,
  ) {}

  /**
   * Three members on loopback, on free ports, data under `dir` (the same disk as Verdict's nodes), fsync as etcd ships
   * it.
   */
  static async start(bin: EtcdBinary, dir: string, size = 3): Promise<EtcdCluster> {
    const ports = await freePorts(2 * size);
    const names = Array.from({ length: size }, (_, i) => `e${i + 1}`);
    const peerUrl = (i: number): string => `http://127.0.0.1:${ports[2 * i + 1]}`;
    const initial = names.map((n, i) => `${n}=${peerUrl(i)}`).join(',');
    const members = names.map((name, i) => {
      const client = `127.0.0.1:${ports[2 * i]}`;
      mkdirSync(join(dir, name), { recursive: true, mode: 0o700 });
      const args = [
        `--name=${name}`,
        `--data-dir=${join(dir, name, 'data')}`,
        `--listen-client-urls=http://${client}`,
        `--advertise-client-urls=http://${client}`,
        `--listen-peer-urls=${peerUrl(i)}`,
        `--initial-advertise-peer-urls=${peerUrl(i)}`,
        `--initial-cluster=${initial}`,
        '--initial-cluster-state=new',
        `--initial-cluster-token=verdict-bench-${process.pid}`,
        // No metrics or debug listeners beyond the client port; warnings only in the log.
        '--log-level=warn',
        '--logger=zap',
      ];
      return { name, client, child: spawnProgram(`etcd ${name}`, bin.path, args, join(dir, `${name}.log`)) };
    });
    const c = new EtcdCluster(members, bin.version);
    try {
      await c.leader(30_000);
    } catch (err) {
      await c.destroy();
      throw err;
    }
    return c;
  }

  /** The client address of the member that leads, once one does. */
  async leader(timeoutMs = 10_000): Promise<string> {
    return waitFor(
      'an etcd leader',
      timeoutMs,
      async () => {
        for (const m of this.members) {
          try {
            const s = await status(m.client, 1_000);
            if (s.leader !== '0' && s.header !== null && s.header.memberId === s.leader) return m.client;
          } catch {
            // Not up yet.
          }
        }
        return undefined;
      },
      200,
    );
  }

  async destroy(): Promise<void> {
    await Promise.all(this.members.map((m) => stopChild(m.child, 'SIGTERM', 5_000)));
  }
}
