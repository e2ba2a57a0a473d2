// TLS for the CLI's client commands (status, txn, leader, put, get, ...):
// `--ca FILE [--cert FILE --key FILE]`, or VERDICT_TLS_CA, VERDICT_TLS_CERT
// and VERDICT_TLS_KEY (flags win). Without a CA the CLI speaks plaintext.
// main.ts reads the flags once; `verdict status` dials with clientTls()
// (node:http2), the other commands with clientCredentials() (grpc-js, in
// client-credentials.ts): the same files, checked once, and the same checks.
import { loadTls, TlsSetupError, type TlsFiles, type TlsMaterial } from '../transport/tls.ts';
import { flag, UsageError } from './args.ts';

export const TLS_FLAGS_HELP = `TLS (a cluster with TLS requires it): --ca FILE --cert FILE --key FILE, the cluster's CA and a client
certificate it signed, or VERDICT_TLS_CA, VERDICT_TLS_CERT, VERDICT_TLS_KEY.
`;

/** Removes --ca, --cert, --key from args; falls back to the environment. Null when no CA is given. */
export function tlsArgs(args: string[], env: Readonly<Record<string, string | undefined>> = process.env): TlsFiles | null {
  const ca = flag(args, '--ca') ?? nonEmpty(env.VERDICT_TLS_CA);
  const cert = flag(args, '--cert') ?? nonEmpty(env.VERDICT_TLS_CERT);
  const key = flag(args, '--key') ?? nonEmpty(env.VERDICT_TLS_KEY);
  if (ca === undefined) {
    if (cert !== undefined || key !== undefined) throw new UsageError("--cert and --key need --ca FILE (or VERDICT_TLS_CA): the CA that signed the nodes' certificates");
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
