// Throwaway certificates for the TLS tests, made with the openssl command
// line in a temp dir (node:crypto can read X.509 but cannot sign it). Each
// CA, node, participant and client certificate is valid for one day, with
// P-256 keys, and carries the names Verdict checks: CN = the node or client
// name, OU = the cluster id, O=verdict-node on a node's (the node mark: see
// nodeSubject in src/transport/tls.ts), and subjectAltName IP:127.0.0.1 / DNS:localhost
// for the usual hostname verification. The openssl steps are those of
// `verdict certs` (src/cli/certs.ts), so the tests run the shipped code.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueCert, makeCa } from '../src/cli/certs.ts';
import { nodeSubject } from '../src/transport/tls.ts';

export interface CertFiles {
  cert: string;
  key: string;
}

export class TestCa {
  readonly cert: string;
  private readonly key: string;

  private constructor(
    readonly dir: string,
    readonly name: string,
  ) {
    this.cert = join(dir, `${name}.crt`);
    this.key = join(dir, `${name}.key`);
  }

  /** A self-signed CA in `dir` (which must exist), valid for one day. */
  static create(dir: string, name: string): TestCa {
    const ca = new TestCa(dir, name);
    makeCa(ca.cert, ca.key, `/CN=${name}`, 1);
    return ca;
  }

  /**
   * Issues a certificate for subject CN=`cn` (and OU=`ou` when given), usable
   * as TLS server and client, valid for 127.0.0.1 and localhost. Files are
   * named after `file` (defaults to cn).
   */
  issue(cn: string, o: { ou?: string; file?: string } = {}): CertFiles {
    return this.issueSubject(`${o.ou !== undefined ? `/OU=${o.ou}` : ''}/CN=${cn}`, o.file ?? cn);
  }

  /** A node's certificate, as `verdict certs` makes it: O=verdict-node, OU=`clusterId`, CN=`nodeId`. */
  node(nodeId: string, clusterId: string, file = nodeId): CertFiles {
    return this.issueSubject(nodeSubject(clusterId, nodeId), file);
  }

  private issueSubject(subject: string, file: string): CertFiles {
    const out = { cert: join(this.dir, `${file}.crt`), key: join(this.dir, `${file}.key`) };
    const ext = 'extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n';
    issueCert({ caCert: this.cert, caKey: this.key, ...out, subject, ext, days: 1, tmpDir: this.dir, file });
    return out;
  }
}

/** A temp dir for certificates; the caller removes it with rmSync(dir, { recursive: true }). */
export function certDir(): string {
  return mkdtempSync(join(tmpdir(), 'verdict-certs-'));
}
