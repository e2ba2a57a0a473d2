// How the examples reach the cluster. By default, the local cluster of
// `npm start` over mutual TLS, with the CA and certificates it made on its
// first start (~/.config/verdict/local/, docs/tls.md): the client certificate
// `alice` for the application, and for each participant or step service a
// certificate named after it, made there with `verdict certs` when missing.
// With VERDICT_INSECURE=true, a cluster that serves plaintext
// (`verdict cluster up --insecure`), said knowingly.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { localClusterTls, tlsCredentials } from 'verdict/client';

const insecure = process.env.VERDICT_INSECURE === 'true';
const verdict = fileURLToPath(new URL('../bin/verdict.mjs', import.meta.url));

/** VerdictClient options. */
export function clientSecurity() {
  return insecure ? { insecure: true } : { credentials: tlsCredentials(localClusterTls()) };
}

/** startParticipant / startStepService options for the participant or step service `id`. */
export function serverSecurity(id) {
  if (insecure) return { insecure: true };
  // Kept when it is already there; the address only names the host the nodes dial.
  execFileSync(process.execPath, [verdict, 'certs', '--participant', `${id}=127.0.0.1:0`], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return { tls: localClusterTls(id) };
}
