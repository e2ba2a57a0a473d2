// `verdict certs`: the certificates of a TLS cluster, made with the openssl
// command line (node:crypto reads X.509 but cannot sign it). One local CA,
// then a certificate for each node, participant, admin and client, with the
// names and usages Verdict checks:
//
//   node         O=verdict-node, OU=<clusterId>, CN=<nodeId>, SAN = its address, serverAuth + clientAuth
//   participant  OU=<clusterId>, CN=<id>, SAN = its address, serverAuth + clientAuth
//                (the nodes call it, and it calls the nodes)
//   admin/client CN=<name>, clientAuth (an admin's CN goes in tls.adminNames)
//
// The node mark (O=verdict-node) is what tells a node's certificate from a
// participant's; the subjects come from src/transport/tls.ts, where the one
// rule that reads them (certificateRole) lives.
//
// An existing CA is reused and existing certificates are kept (--force
// issues them again), so adding a participant later is one more run.
//
// By default the files go to the cluster's folder outside any checkout
// (~/.config/verdict/<cluster id>/, src/transport/local-cluster.ts), made
// readable by its owner only: `verdict cluster up` makes the local cluster's
// there on its first start, and a participant or step service of the local
// cluster started without TLS flags gets its certificate there on demand.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import {
  LOCAL_ADMIN,
  LOCAL_CLIENT,
  LOCAL_CLUSTER_ID,
  localCertFiles,
  localCertsDir,
} from '../transport/local-cluster.ts';
import { isLoopbackHost } from '../transport/listen-policy.ts';
import { nodeSubject, participantSubject, type TlsFiles } from '../transport/tls.ts';
import { bool, CommandError, flag, flagAll, UsageError } from './args.ts';
import { ID as NAME } from '../domain/id.ts';

export const CERTS_HELP = `  verdict certs [--dir DIR] [--cluster-id ID] [--nodes N] [--base-port PORT]
                [--participant ID=HOST:PORT ...] [--admin NAME ...] [--client NAME ...] [--days N] [--force]
                                      make a local CA (DIR/ca.crt, ca.key; reused when present) and certificates for
                                      nodes n1..nN at 127.0.0.1:PORT.. (default 3 at 7001), participants, admins
                                      (clientAuth; their CN goes in tls.adminNames) and clients; with no
                                      --participant/--admin/--client: shop=127.0.0.1:7101, ledger=127.0.0.1:7102,
                                      admin ops-admin, client alice. DIR defaults to ~/.config/verdict/ID/
                                      ($VERDICT_CONFIG_DIR/ID/; ID is the cluster id, local by default: the local
                                      cluster's folder); existing files are kept unless --force. Needs openssl
`;

export interface CertsPlan {
  dir: string;
  clusterId: string;
  days: number;
  force: boolean;
  nodes: { id: string; address: string }[];
  participants: { id: string; address: string }[];
  admins: string[];
  clients: string[];
}

export function parseCertsArgs(argv: readonly string[]): CertsPlan {
  const args = [...argv];
  const dirFlag = flag(args, '--dir');
  const clusterId = flag(args, '--cluster-id') ?? LOCAL_CLUSTER_ID;
  const n = Number(flag(args, '--nodes') ?? 3);
  const basePort = Number(flag(args, '--base-port') ?? 7001);
  const days = Number(flag(args, '--days') ?? 825);
  const force = bool(args, '--force');
  const participantSpecs = flagAll(args, '--participant');
  const admins = flagAll(args, '--admin');
  const clients = flagAll(args, '--client');
  if (args.length > 0) throw new UsageError(`unexpected argument "${args[0]}"; run verdict certs --help`);
  if (!NAME.test(clusterId))
    throw new UsageError(`--cluster-id "${clusterId}" must be 1-64 letters, digits, ".", "_" or "-"`);
  if (!Number.isInteger(n) || n < 0 || n > 9) throw new UsageError('--nodes must be an integer from 0 to 9');
  if (!Number.isInteger(basePort) || basePort < 1 || basePort + n > 65_536)
    throw new UsageError('--base-port must be a port number');
  if (!Number.isInteger(days) || days < 1 || days > 3_650)
    throw new UsageError('--days must be an integer from 1 to 3650');
  const participants = participantSpecs.map((spec) => {
    const eq = spec.indexOf('=');
    const id = spec.slice(0, eq);
    const address = spec.slice(eq + 1);
    if (eq < 0 || !NAME.test(id) || !/^.+:\d{1,5}$/.test(address))
      throw new UsageError(
        `--participant "${spec}" must be ID=HOST:PORT, e.g. shop=127.0.0.1:7101 (the address the nodes dial)`,
      );
    return { id, address };
  });
  for (const name of [...admins, ...clients])
    if (!NAME.test(name))
      throw new UsageError(`certificate name "${name}" must be 1-64 letters, digits, ".", "_" or "-"`);
  // Files are named by the certificate's name: a participant, admin or client named like a node (or the CA)
  // would be handed that node's (or the CA's) existing key.
  const named = [...participants.map((p) => p.id), ...admins, ...clients];
  for (const name of named) {
    if (name === 'ca' || /^n\d+$/.test(name))
      throw new UsageError(
        `"${name}" is the name of ${name === 'ca' ? "the CA's files" : 'a node'} (ca, n1, n2, ...): pick another name for a participant, admin or client`,
      );
  }
  const twice = named.find((name, i) => named.indexOf(name) !== i);
  if (twice !== undefined)
    throw new UsageError(
      `"${twice}" is named twice: each participant, admin and client needs a name of its own (its files are ${twice}.crt and ${twice}.key)`,
    );
  const none = participants.length === 0 && admins.length === 0 && clients.length === 0;
  return {
    dir: dirFlag ?? localCertsDir(clusterId),
    clusterId,
    days,
    force,
    nodes: Array.from({ length: n }, (_, i) => ({ id: `n${i + 1}`, address: `127.0.0.1:${basePort + i}` })),
    participants: none
      ? [
          { id: 'shop', address: '127.0.0.1:7101' },
          { id: 'ledger', address: '127.0.0.1:7102' },
        ]
      : participants,
    admins: none ? [LOCAL_ADMIN] : admins,
    clients: none ? [LOCAL_CLIENT] : clients,
  };
}

/** Why an existing certificate is not the one `subject` and `ext` would make, or null when it is. */
export function keptCertificateProblem(certFile: string, subject: string, ext: string): string | null {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(certFile));
  } catch (err) {
    return `cannot be read as a certificate (${(err as Error).message})`;
  }
  // `/OU=local/CN=n1` → `OU=local\nCN=n1`, the form X509Certificate.subject has.
  const want = subject
    .split('/')
    .filter((p) => p !== '')
    .join('\n');
  if (cert.subject !== want) return `is ${cert.subject.replace(/\n/g, ', ')}, not ${want.replace(/\n/g, ', ')}`;
  const serverAuth = (cert.keyUsage ?? []).includes('1.3.6.1.5.5.7.3.1');
  if (serverAuth !== /serverAuth/.test(ext))
    return serverAuth ? 'may serve TLS (serverAuth), which this kind of certificate must not' : 'lacks serverAuth';
  return null;
}

/** The subjectAltName for an address's host: an IP, or a DNS name (localhost also gets 127.0.0.1). */
export function subjectAltName(address: string): string {
  const host = address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0) return host === '127.0.0.1' ? 'IP:127.0.0.1,DNS:localhost' : `IP:${host}`;
  return host === 'localhost' ? 'DNS:localhost,IP:127.0.0.1' : `DNS:${host}`;
}

export async function certsCommand(argv: string[]): Promise<void> {
  makeCertificates(parseCertsArgs(argv), say);
}

/**
 * The local cluster's CA and certificates for `nodes` nodes from `basePort` (and the
 * defaults of `verdict certs`: participants shop and ledger, admin
 * ops-admin, client alice), made where missing; `say` hears what was made.
 * Returns the folder.
 */
export function ensureLocalClusterCerts(nodes: number, basePort: number, say: (line: string) => void): string {
  const plan = parseCertsArgs(['--nodes', String(nodes), '--base-port', String(basePort)]);
  const names = [
    'ca',
    ...plan.nodes.map((n) => n.id),
    ...plan.participants.map((p) => p.id),
    ...plan.admins,
    ...plan.clients,
  ];
  if (names.every((n) => existsSync(join(plan.dir, `${n}.crt`)) && existsSync(join(plan.dir, `${n}.key`))))
    return plan.dir;
  makeCertificates(plan, (line) => (line.startsWith('kept') ? undefined : say(line)));
  return plan.dir;
}

/**
 * For a participant or step service `id` of the local cluster started
 * without TLS flags: its certificate from the local cluster's folder, issued
 * there by the local CA when missing (the CA's key is this user's own, so
 * this grants nothing its holder could not sign anyway). Null when the local
 * cluster has no CA here. `id` follows the rules of --participant: never a
 * node's name or the CA's, and an existing certificate is used only if it
 * is that participant's.
 */
export function localParticipantCert(
  id: string,
  address: string,
  say: (line: string) => void,
): Required<TlsFiles> | null {
  const dir = localCertsDir(LOCAL_CLUSTER_ID);
  if (!existsSync(join(dir, 'ca.crt'))) return null;
  const plan = parseCertsArgs(['--nodes', '0', '--participant', `${id}=${address}`]);
  // Without the CA's key nothing can be issued; a certificate already there is still checked by the participant's
  // start.
  if (!existsSync(join(dir, 'ca.key'))) {
    const files = localCertFiles(id);
    if (files === null)
      throw new CommandError(
        `the local cluster's CA key (${join(dir, 'ca.key')}) is not here to issue a certificate for ${id}; give --ca, --cert and --key`,
      );
    return files;
  }
  makeCertificates(plan, (line) => (line.startsWith('kept') ? undefined : say(line)));
  return localCertFiles(id);
}

/**
 * The TLS of `verdict participant` or `verdict saga service` given neither
 * TLS files nor --insecure: for the local cluster (its id, every endpoint on
 * loopback), its certificate from the local cluster's folder (made there on
 * demand); otherwise null, and the start refuses plaintext with what to give.
 */
export function localServerTls(
  id: string,
  address: string,
  clusterId: string,
  endpoints: readonly string[],
  log: { info(msg: string): void },
): Required<TlsFiles> | null {
  if (clusterId !== LOCAL_CLUSTER_ID || !endpoints.every((e) => isLoopbackHost(e.slice(0, e.lastIndexOf(':')))))
    return null;
  return localParticipantCert(id, address, (line) => log.info(line.replace(/\s+/g, ' ')));
}

/** Makes (or keeps) the CA and the certificates of `plan`, saying each. */
export function makeCertificates(plan: CertsPlan, say: (line: string) => void): void {
  // Owner only: the folder holds the CA's key, and every certificate's.
  mkdirSync(plan.dir, { recursive: true, mode: 0o700 });
  const tmp = mkdtempSync(join(tmpdir(), 'verdict-certs-'));
  try {
    const caCert = join(plan.dir, 'ca.crt');
    const caKey = join(plan.dir, 'ca.key');
    // A CA certificate without its key (or the reverse) is never replaced: every certificate it signed would stop
    // working.
    if (existsSync(caCert) !== existsSync(caKey))
      throw new CommandError(
        `${existsSync(caCert) ? caCert : caKey} is there without ${existsSync(caCert) ? caKey : caCert}: the CA cannot sign; put it back, or use another --dir`,
      );
    if (existsSync(caCert) && existsSync(caKey)) say(`kept     ${caCert} (the existing CA signs the new certificates)`);
    else {
      makeCa(caCert, caKey, `/CN=verdict ${plan.clusterId} CA`, Math.max(plan.days, 3_650));
      say(`made     ${caCert} (keep ${caKey} private: it can sign certificates the cluster trusts)`);
    }
    const issue = (file: string, subject: string, ext: string, what: string): void => {
      const cert = join(plan.dir, `${file}.crt`);
      const key = join(plan.dir, `${file}.key`);
      if (!plan.force && existsSync(cert) && existsSync(key)) {
        // Kept only if it is the certificate asked for: same subject (name, cluster) and the same usages.
        const problem = keptCertificateProblem(cert, subject, ext);
        if (problem !== null)
          throw new CommandError(
            `${cert} already exists and ${problem}; it is not handed out as ${what.replace(/^\(|\)$/g, '')}: use another name, or --force to issue it again`,
          );
        return say(`kept     ${cert} (--force issues it again)`);
      }
      issueCert({ caCert, caKey, cert, key, subject, ext, days: plan.days, tmpDir: tmp, file });
      say(`made     ${cert} ${what}`);
    };
    for (const nd of plan.nodes)
      issue(
        nd.id,
        nodeSubject(plan.clusterId, nd.id),
        `extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=${subjectAltName(nd.address)}\n`,
        `(node ${nd.id} of ${plan.clusterId} at ${nd.address})`,
      );
    for (const p of plan.participants)
      issue(
        p.id,
        participantSubject(plan.clusterId, p.id),
        `extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=${subjectAltName(p.address)}\n`,
        `(participant ${p.id} at ${p.address})`,
      );
    for (const a of plan.admins)
      issue(a, `/CN=${a}`, 'extendedKeyUsage=clientAuth\n', `(admin: put "${a}" in the nodes' tls.adminNames)`);
    for (const c of plan.clients) issue(c, `/CN=${c}`, 'extendedKeyUsage=clientAuth\n', '(client)');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** A self-signed CA (P-256) at caCert/caKey, with subject `subject` (`/CN=...`). */
export function makeCa(caCert: string, caKey: string, subject: string, days: number): void {
  openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    caKey,
    '-out',
    caCert,
    '-days',
    String(days),
    '-subj',
    subject,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

export interface CertRequest {
  caCert: string;
  caKey: string;
  /** Where the certificate and its (unencrypted, P-256) key are written. */
  cert: string;
  key: string;
  /** `/OU=.../CN=...` */
  subject: string;
  /** Extension lines after basicConstraints and keyUsage: extendedKeyUsage, subjectAltName. */
  ext: string;
  days: number;
  /** A directory for the request and extension files, and their base name in it. */
  tmpDir: string;
  file: string;
}

/** A leaf certificate signed by the CA (the CA's serial file, next to it, is created or advanced). */
export function issueCert(r: CertRequest): void {
  const csr = join(r.tmpDir, `${r.file}.csr`);
  const extFile = join(r.tmpDir, `${r.file}.ext`);
  openssl([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    r.key,
    '-out',
    csr,
    '-subj',
    r.subject,
  ]);
  writeFileSync(extFile, `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n${r.ext}`);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    r.caCert,
    '-CAkey',
    r.caKey,
    '-CAcreateserial',
    '-days',
    String(r.days),
    '-out',
    r.cert,
    '-extfile',
    extFile,
  ]);
  rmSync(csr, { force: true });
  rmSync(extFile, { force: true });
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT')
      throw new CommandError('verdict certs needs the openssl command line tool (on Debian: apt-get install openssl)');
    throw new CommandError(`openssl ${args[0]} failed: ${e.stderr?.toString().trim() ?? e.message}`);
  }
}
