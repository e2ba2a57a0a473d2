// TLS for every Verdict connection: loading and checking certificate files,
// the identity a certificate carries, and error messages a person can act on
// when a handshake fails (grpc-js credentials from them: tls-credentials.ts).
//
// TLS in Verdict is always mutual: a server (node or participant) asks every
// caller for a certificate signed by its CA and refuses the connection
// without one; a caller checks the server's certificate against its CA and
// the address it dialled (subjectAltName), as any TLS client does.
//
// Names. A node's certificate has subject CN=<node id>, OU=<cluster id> and
// a subjectAltName for the host its peers and clients dial. A node checks
// both names on every peer, in both directions: the certificate of the peer
// it dials, and the client certificate of a peer that opens a Raft stream to
// it (CN must equal the stream's sender). A client's or participant's
// certificate is signed by the CA and names it: an admin by its CN (in the
// nodes' tls.adminNames), a participant by CN=<participant id> and
// OU=<cluster id>; the checks are in src/transport/auth.ts (nodes) and
// src/participant/node-callers.ts (participants), the model in
// docs/security.md.
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { PeerCertificate } from 'node:tls';
import { isIP } from 'node:net';

/** Paths of the PEM files; cert and key go together (a client may have neither). */
export interface TlsFiles {
  ca: string;
  cert?: string;
  key?: string;
}

/** The files' contents, checked: the key matches the certificate, and the CA signed it. */
export interface TlsMaterial {
  ca: Buffer;
  cert: Buffer | null;
  key: Buffer | null;
  /** The leaf certificate of `cert`, parsed. */
  leaf: X509Certificate | null;
}

export class TlsSetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsSetupError';
  }
}

/**
 * Reads and checks the files. `name` says how the user named each file in
 * messages (e.g. `"tls.cert"` or `--cert`). Throws TlsSetupError with the
 * file, what is wrong and what is expected.
 */
export function loadTls(files: TlsFiles, name: (k: 'ca' | 'cert' | 'key') => string): TlsMaterial {
  if ((files.cert === undefined) !== (files.key === undefined)) {
    const missing = files.cert === undefined ? 'cert' : 'key';
    throw new TlsSetupError(
      `${name(missing)} is missing: a certificate and its private key go together (${name('cert')} and ${name('key')})`,
    );
  }
  const ca = readPem(files.ca, name('ca'), 'CERTIFICATE');
  const caCerts = pemBlocks(ca, 'CERTIFICATE').map((b, i) =>
    parseCert(b, `${name('ca')} (${files.ca}), certificate ${i + 1}`),
  );
  if (files.cert === undefined || files.key === undefined) return { ca, cert: null, key: null, leaf: null };
  const cert = readPem(files.cert, name('cert'), 'CERTIFICATE');
  const key = readPem(files.key, name('key'), 'PRIVATE KEY');
  const chain = pemBlocks(cert, 'CERTIFICATE');
  const leaf = parseCert(chain[0], `${name('cert')} (${files.cert})`);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new TlsSetupError(
      `${name('key')} (${files.key}) is not a usable private key (${(err as Error).message}); expected an unencrypted PEM key`,
    );
  }
  if (!leaf.checkPrivateKey(privateKey))
    throw new TlsSetupError(`${name('key')} (${files.key}) is not the private key of ${name('cert')} (${files.cert})`);
  const nowMs = Date.now();
  if (Date.parse(leaf.validTo) < nowMs)
    throw new TlsSetupError(`${name('cert')} (${files.cert}) expired on ${leaf.validTo}; issue a new certificate`);
  // With an intermediate in the chain the CA signed the intermediate, not the leaf; the handshake checks that case.
  if (chain.length === 1 && !caCerts.some((c) => leaf.checkIssued(c) && leaf.verify(c.publicKey))) {
    throw new TlsSetupError(
      `${name('cert')} (${files.cert}, issued by "${oneLine(leaf.issuer)}") is not signed by the CA in ${name('ca')} (${files.ca}); whoever it connects to would refuse it`,
    );
  }
  return { ca, cert, key, leaf };
}

/** A certificate subject's field (CN, OU, ...): the first value, or undefined. */
export function subjectField(
  subject: string | Record<string, string | string[] | undefined> | undefined,
  field: string,
): string | undefined {
  if (subject === undefined) return undefined;
  if (typeof subject === 'string') {
    // X509Certificate.subject: one "KEY=value" per line.
    for (const line of subject.split('\n')) if (line.startsWith(`${field}=`)) return line.slice(field.length + 1);
    return undefined;
  }
  const v = subject[field];
  return Array.isArray(v) ? v[0] : v;
}

type Subject = string | Record<string, string | string[] | undefined> | undefined;

/** Every value of a subject's field (a certificate may repeat one). */
function subjectFields(subject: Subject, field: string): string[] {
  if (subject === undefined) return [];
  if (typeof subject === 'string')
    return subject.split('\n').flatMap((line) => (line.startsWith(`${field}=`) ? [line.slice(field.length + 1)] : []));
  const v = subject[field];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

// Roles. `verdict certs` makes three kinds of certificate, and this is the
// one rule every check uses to tell them apart:
//
//   node         O=verdict-node, OU=<cluster id>, CN=<node id>
//   participant  OU=<cluster id>, CN=<participant or step service id>, no node mark
//   client       anything else the CA signed (an admin is a client named in tls.adminNames)
//
// The node mark is what lets a caller that knows a node only by its address
// (a participant, a step service, the CLI, the SDK) tell a node from a
// participant: without it the two have the same form, and a participant's
// certificate at a down node's address could name itself a node.

/** The subject field and value that mark a node's certificate. */
export const NODE_MARK = { field: 'O', value: 'verdict-node' } as const;

export type CertificateRole = 'node' | 'participant' | 'client';

/** Whether the subject carries the node mark: exactly one O, and it is verdict-node. */
function hasNodeMark(subject: Subject): boolean {
  const o = subjectFields(subject, NODE_MARK.field);
  return o.length === 1 && o[0] === NODE_MARK.value;
}

/** The role a verified certificate's subject gives its holder in cluster `clusterId`. */
export function certificateRole(subject: Subject, clusterId: string): CertificateRole {
  if (subjectField(subject, 'OU') !== clusterId) return 'client';
  return hasNodeMark(subject) ? 'node' : 'participant';
}

/** The subject `verdict certs` gives node `nodeId` of `clusterId` (openssl's -subj form). */
export function nodeSubject(clusterId: string, nodeId: string): string {
  return `/${NODE_MARK.field}=${NODE_MARK.value}/OU=${clusterId}/CN=${nodeId}`;
}

/** The subject `verdict certs` gives participant or step service `id` of `clusterId` (openssl's -subj form). */
export function participantSubject(clusterId: string, id: string): string {
  return `/OU=${clusterId}/CN=${id}`;
}

function named(subject: Subject): string {
  const clip = (v: string | undefined): string => (v === undefined ? '-' : v.slice(0, 64));
  const o = subjectFields(subject, 'O');
  return `${o.length > 0 ? `O=${o.map(clip).join('+')}, ` : ''}OU=${clip(subjectField(subject, 'OU'))}, CN=${clip(subjectField(subject, 'CN'))}`;
}

/**
 * Why `subject` is not a node's certificate (the node mark) of cluster
 * `clusterId` (OU; any cluster when undefined: what a client that knows no
 * cluster id can check); null when it is.
 */
export function nodeRoleProblem(subject: Subject, clusterId?: string): string | null {
  const ou = subjectField(subject, 'OU');
  if (clusterId !== undefined && ou !== clusterId)
    return `certificate (${named(subject)}) is not of cluster "${clusterId}" (OU=${clusterId})`;
  if (!hasNodeMark(subject))
    return `certificate (${named(subject)}) is not a node's: it lacks the node mark ${NODE_MARK.field}=${NODE_MARK.value} (a participant's or a client's certificate, or a node certificate made without the mark: issue it again with verdict certs --force)`;
  return null;
}

/** Why `subject` is not node `nodeId` of cluster `clusterId` (CN, OU and the node mark); null when it is. */
export function nodeCertificateProblem(subject: Subject, clusterId: string, nodeId: string): string | null {
  const cn = subjectField(subject, 'CN');
  const ou = subjectField(subject, 'OU');
  if (cn !== nodeId || ou !== clusterId) {
    return `certificate names node "${cn?.slice(0, 64) ?? ''}" of cluster "${ou?.slice(0, 64) ?? ''}" (${named(subject)}), expected node "${nodeId}" of cluster "${clusterId}" (${nodeSubject(clusterId, nodeId).slice(1).split('/').join(', ')})`;
  }
  return nodeRoleProblem(subject, clusterId);
}

/**
 * Why a server's certificate is not the node a caller expects (nodeCertificateProblem with a node id, else
 * nodeRoleProblem); null when it is.
 */
export function nodeServerProblem(subject: Subject, expect: { clusterId?: string; nodeId?: string }): string | null {
  if (expect.nodeId !== undefined && expect.clusterId !== undefined)
    return nodeCertificateProblem(subject, expect.clusterId, expect.nodeId);
  return nodeRoleProblem(subject, expect.clusterId);
}

/**
 * Why `subject` is not participant (or step service) `id`'s certificate of cluster `clusterId` (CN, OU, no node mark);
 * null when it is.
 */
export function participantServerProblem(subject: Subject, clusterId: string, id: string): string | null {
  const cn = subjectField(subject, 'CN');
  if (cn === id && certificateRole(subject, clusterId) === 'participant') return null;
  const what = certificateRole(subject, clusterId) === 'node' ? 'node' : '';
  return `certificate names ${what === '' ? '' : 'node '}"${cn?.slice(0, 64) ?? ''}" of cluster "${subjectField(subject, 'OU')?.slice(0, 64) ?? ''}" (${named(subject)}), expected participant "${id}" of cluster "${clusterId}" (OU=${clusterId}, CN=${id}, without the node mark)`;
}

/** Whether the certificate's subjectAltName covers `host` (an IP address or a DNS name). */
export function certificateNamesHost(leaf: X509Certificate, host: string): boolean {
  const h = host.startsWith('[') ? host.slice(1, -1) : host;
  return isIP(h) !== 0 ? leaf.checkIP(h) !== undefined : leaf.checkHost(h) !== undefined;
}

/** What a server call tells about its caller (grpc-js does not export its AuthContext type). */
export interface AuthenticatedCall {
  getAuthContext(): { sslPeerCertificate?: PeerCertificate } | null;
}

/** The verified client certificate of a call, or null (plaintext, or no certificate). */
export function peerCertificate(call: AuthenticatedCall): PeerCertificate | null {
  return call.getAuthContext()?.sslPeerCertificate ?? null;
}

/**
 * A connection error, said so a person knows what to fix. `details` is
 * grpc's text ("No connection established. Last error: ..."); `tls` says
 * whether this side used TLS. Unrelated errors come back shortened only.
 */
export function explainConnectError(details: string, tls: boolean): string {
  const text = details
    .replace(/^\d+ [A-Z_]+: /, '')
    .replace(/^No connection established\. Last error: (Error: )?/, '')
    .replace(/\s*\(\d{4}-\d\d-\d\dT[^)]*\)/, '')
    .replace(/\.? ?Resolution note:.*$/s, '')
    .replace(/[0-9A-F]{8,}:error:[0-9A-F]+:SSL routines:[a-z0-9_]+:([^:]+):.*$/s, '$1')
    .trim();
  const why = ((): string | null => {
    if (/alert certificate required/.test(text))
      return "the server requires a client certificate (mutual TLS): give a certificate and key signed by the cluster's CA";
    if (/alert (unknown ca|bad certificate|certificate unknown|decrypt error)/.test(text))
      return 'the server refused our certificate: it is not signed by the CA the server trusts';
    if (/alert certificate expired/.test(text)) return 'the server refused our certificate: it has expired';
    if (
      /self[- ]signed certificate|unable to verify the first certificate|unable to get (local )?issuer certificate|certificate signature failure/.test(
        text,
      )
    ) {
      return "the server's certificate is not signed by our CA: check the CA file";
    }
    if (/certificate has expired/.test(text)) return "the server's certificate has expired";
    if (/Hostname\/IP does not match|ERR_TLS_CERT_ALTNAME_INVALID|does not match certificate's altnames/i.test(text))
      return "the server's certificate does not name the address we dialled (subjectAltName)";
    if (/wrong version number|packet length too long|http request/i.test(text))
      return 'the server does not speak TLS: TLS is configured here but not there';
    if (/^Failed to connect$/.test(text)) {
      return tls
        ? 'the server closed the TLS handshake: it refused our certificate (not signed by its CA, or none given) or it does not serve TLS'
        : 'the server closed the connection during set-up: it may require TLS; give the CA file (and a client certificate and key)';
    }
    return null;
  })();
  return why === null ? text : `${why} (${text})`;
}

function readPem(path: string, name: string, label: 'CERTIFICATE' | 'PRIVATE KEY'): Buffer {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (err) {
    throw new TlsSetupError(
      `${name}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); expected a PEM file`,
    );
  }
  const re =
    label === 'PRIVATE KEY' ? /-----BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY-----/ : /-----BEGIN CERTIFICATE-----/;
  if (!re.test(data.toString('latin1')))
    throw new TlsSetupError(
      `${name}: ${path} holds no PEM ${label === 'PRIVATE KEY' ? 'private key' : 'certificate'} (expected a "-----BEGIN ${label}-----" block)`,
    );
  if (/ENCRYPTED PRIVATE KEY|Proc-Type: 4,ENCRYPTED/.test(data.toString('latin1')))
    throw new TlsSetupError(
      `${name}: ${path} is encrypted; give an unencrypted key (openssl pkey -in ${path} -out new.key)`,
    );
  return data;
}

function pemBlocks(pem: Buffer, label: string): string[] {
  return pem.toString('latin1').match(new RegExp(`-----BEGIN ${label}-----[^-]+-----END ${label}-----`, 'g')) ?? [];
}

function parseCert(pem: string | undefined, what: string): X509Certificate {
  try {
    if (pem === undefined) throw new Error('no certificate');
    return new X509Certificate(pem);
  } catch (err) {
    throw new TlsSetupError(`${what} is not a valid X.509 certificate (${(err as Error).message})`);
  }
}

function oneLine(dn: string): string {
  return dn.split('\n').join(', ');
}

// grpc-js gives Node's TLS the dialled host as server name, IP addresses
// included, for which Node prints a deprecation warning (DEP0123) on stderr
// once per process. Dialling an IP address is how Verdict is configured
// (and the certificate check still matches the IP against subjectAltName),
// so the warning is noise in a command's one-line error output: drop it.
const emitWarning = process.emitWarning.bind(process) as (...args: unknown[]) => void;
process.emitWarning = ((warning: string | Error, ...rest: unknown[]): void => {
  const code = typeof rest[0] === 'object' && rest[0] !== null ? (rest[0] as { code?: string }).code : rest[1];
  if (code === 'DEP0123') return;
  emitWarning(warning, ...rest);
}) as typeof process.emitWarning;
