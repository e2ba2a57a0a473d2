// A participant serves TLS to the cluster's nodes and calls them as a
// client, so its certificate must allow both (extendedKeyUsage serverAuth
// and clientAuth) and name the address the nodes dial (subjectAltName). A
// client-only certificate registers fine and then fails every PREPARE with
// "unsuitable certificate purpose"; this check refuses it at start instead,
// with the fix.
import type { X509Certificate } from 'node:crypto';
import { certificateNamesHost } from '../transport/tls.ts';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_USAGE = '2.5.29.37.0';

/** Null when `leaf` suits a participant reached at `advertise`; otherwise what is wrong and how to fix it. */
export function participantCertificateProblem(
  leaf: X509Certificate,
  certFile: string,
  participantId: string,
  advertise: string,
): string | null {
  const fix = `make one with: npx verdict certs --participant ${participantId}=${advertise} (serverAuth+clientAuth, subjectAltName for ${advertise})`;
  // No extendedKeyUsage extension at all permits every usage.
  const usages = leaf.keyUsage;
  if (usages !== undefined && !usages.includes(ANY_USAGE)) {
    const missing = [
      usages.includes(SERVER_AUTH) ? null : 'serverAuth',
      usages.includes(CLIENT_AUTH) ? null : 'clientAuth',
    ].filter((x) => x !== null);
    if (missing.length > 0) {
      return `--cert (${certFile}) lacks ${missing.join(' and ')} in its extendedKeyUsage: the cluster's nodes call a participant as a TLS server and it calls them as a client, so every transaction would abort ("unsuitable certificate purpose"); ${fix}`;
    }
  }
  const host = advertise.slice(0, advertise.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  // A wildcard listen address is not what anyone dials; --advertise names the real one.
  if (host === '0.0.0.0' || host === '::') return null;
  if (!certificateNamesHost(leaf, host)) {
    const names = leaf.subjectAltName ?? 'none';
    return `--cert (${certFile}) does not name ${host} in its subjectAltName (it names: ${names}): the nodes dial this participant at ${advertise} and would refuse its certificate; ${fix}`;
  }
  return null;
}
