// Throwaway certificates for the TLS tests, made with the openssl command
// line in a temp dir (node:crypto can read X.509 but cannot sign it). Each
// CA, node, participant and client certificate is valid for one day, with
// P-256 keys, and carries the names Verdict checks: CN = the node or client
// name, OU = the cluster id, and subjectAltName IP:127.0.0.1 / DNS:localhost
// for the usual hostname verification.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CertFiles {
  cert: string;
  key: string;
}

export class TestCa {
  readonly cert: string;
  private readonly key: string;
  private serial = 1;

  private constructor(
    readonly dir: string,
    readonly name: string,
  ) {
    this.cert = join(dir, `${name}.crt`);
    this.key = join(dir, `${name}.key`);
  }

  /** A self-signed CA in `dir` (which must exist). */
  static create(dir: string, name: string): TestCa {
    const ca = new TestCa(dir, name);
    openssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      ca.key,
      '-out',
      ca.cert,
      '-days',
      '1',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    return ca;
  }

  /**
   * Issues a certificate for subject CN=`cn` (and OU=`ou` when given), usable
   * as TLS server and client, valid for 127.0.0.1 and localhost. Files are
   * named after `file` (defaults to cn).
   */
  issue(cn: string, o: { ou?: string; file?: string } = {}): CertFiles {
    const base = join(this.dir, o.file ?? cn);
    const out = { cert: `${base}.crt`, key: `${base}.key` };
    const csr = `${base}.csr`;
    const ext = `${base}.ext`;
    const subj = `${o.ou !== undefined ? `/OU=${o.ou}` : ''}/CN=${cn}`;
    openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', out.key, '-out', csr, '-subj', subj]);
    writeFileSync(ext, 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n');
    openssl(['x509', '-req', '-in', csr, '-CA', this.cert, '-CAkey', this.key, '-set_serial', String(this.serial++), '-out', out.cert, '-days', '1', '-extfile', ext]);
    rmSync(csr);
    rmSync(ext);
    return out;
  }
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 20_000 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: Buffer };
    if (e.code === 'ENOENT') throw new Error('the TLS tests need the openssl command line tool (apt-get install openssl)');
    throw new Error(`openssl ${args[0]} failed: ${e.stderr?.toString().trim() ?? e.message}`);
  }
}

/** A temp dir for certificates; the caller removes it with rmSync(dir, { recursive: true }). */
export function certDir(): string {
  return mkdtempSync(join(tmpdir(), 'verdict-certs-'));
}
