// TLS for the CLI's client commands (status, txn, leader, member, ...):
// `--ca FILE [--cert FILE --key FILE]`, or VERDICT_TLS_CA, VERDICT_TLS_CERT
// and VERDICT_TLS_KEY (flags win). Without them, a command whose endpoints
// are all on loopback uses the local cluster's CA and admin certificate,
// which `verdict cluster up` (`npm start`) made (src/transport/local-cluster.ts);
// plaintext only with --insecure (or VERDICT_INSECURE=true); given none of
// these, a command is refused before it sends anything. main.ts reads the
// flags once; `verdict status` dials with clientTls() (node:http2), the
// other commands with clientCredentials() (grpc-js, in
// client-credentials.ts): the same files, checked once, and the same checks.
import { LOCAL_ADMIN, localCertFiles, localCertsDir } from '../transport/local-cluster.ts';
import { isLoopbackHost } from '../transport/listen-policy.ts';
import { loadTls, TlsSetupError, type TlsFiles, type TlsMaterial } from '../transport/tls.ts';
import { bool, flag, UsageError } from './args.ts';

export const TLS_FLAGS_HELP = `TLS (a cluster with TLS requires it): --ca FILE --cert FILE --key FILE, the cluster's CA and a client
certificate it signed, or VERDICT_TLS_CA, VERDICT_TLS_CERT, VERDICT_TLS_KEY. Without them, for endpoints on
127.0.0.1, the local cluster's CA and admin certificate (made by npm start, in ~/.config/verdict/local/ or
$VERDICT_CONFIG_DIR/local/). Plaintext only with --insecure (or VERDICT_INSECURE=true).
`;

/** Removes --ca, --cert, --key from args; falls back to the environment. Null when no CA is given. */
export function tlsArgs(
  args: string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): TlsFiles | null {
  const ca = flag(args, '--ca') ?? nonEmpty(env.VERDICT_TLS_CA);
  const cert = flag(args, '--cert') ?? nonEmpty(env.VERDICT_TLS_CERT);
  const key = flag(args, '--key') ?? nonEmpty(env.VERDICT_TLS_KEY);
  if (ca === undefined) {
    if (cert !== undefined || key !== undefined)
      throw new UsageError(
        "--cert and --key need --ca FILE (or VERDICT_TLS_CA): the CA that signed the nodes' certificates",
      );
    return null;
  }
  return { ca, cert, key };
}

/** Reads and checks the files; every problem is one UsageError line. */
export function loadClientTls(files: TlsFiles): TlsMaterial {
  try {
    return loadTls(files, (k) => `--${k}`);
  } catch (err) {
    if (err instanceof TlsSetupError) throw new UsageError(err.message);
    throw err;
  }
}

/** --insecure (removed from args), or VERDICT_INSECURE=true: plaintext, chosen knowingly. */
export function insecureArg(args: string[], env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return bool(args, '--insecure') || env.VERDICT_INSECURE === 'true';
}

/**
 * How a client command connects: the TLS files given (flags, then the
 * environment); else plaintext when told --insecure; else, when every
 * endpoint is on loopback, the local cluster's CA and admin certificate.
 * Anything else is refused with what to give. Removes the flags it reads;
 * `--endpoints` is only looked at (the command reads it).
 */
export function clientSecurity(
  args: string[],
  env: Readonly<Record<string, string | undefined>> = process.env,
): TlsFiles | null {
  const insecureFlag = args.includes('--insecure');
  const files = tlsArgs(args, env);
  const insecure = insecureArg(args, env);
  if (files !== null) {
    if (insecureFlag)
      throw new UsageError(
        '--insecure and TLS files (--ca, --cert, --key or VERDICT_TLS_*) were both given: choose one',
      );
    return files;
  }
  if (insecure) return null;
  const at = args.indexOf('--endpoints');
  const endpoints = (at >= 0 ? args[at + 1] : env.VERDICT_ENDPOINTS) ?? '';
  const local = endpoints
    .split(',')
    .every((e) => e.trim() === '' || isLoopbackHost(e.trim().slice(0, e.trim().lastIndexOf(':'))));
  const how =
    "give the cluster's CA and a client certificate with --ca FILE --cert FILE --key FILE (or VERDICT_TLS_CA, _CERT, _KEY), or --insecure for a cluster that serves plaintext";
  if (!local) throw new UsageError(`no TLS for ${endpoints}: ${how}`);
  const found = localCertFiles(LOCAL_ADMIN, env);
  if (found === null)
    throw new UsageError(
      `no TLS: the local cluster's certificates are not in ${localCertsDir(undefined, env)} (npm start makes them on its first start); ${how}`,
    );
  return found;
}

let current: TlsMaterial | null = null;

/** Called once by main.ts for client commands. */
export function useClientTls(files: TlsFiles | null): void {
  current = files === null ? null : loadClientTls(files);
}

/** The CA and client certificate every client command connects with; null: plaintext. */
export function clientTls(): TlsMaterial | null {
  return current;
}

export function clientUsesTls(): boolean {
  return current !== null;
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === '' ? undefined : v;
}
