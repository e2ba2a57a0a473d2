// Where the certificates of a cluster on this machine live: one folder per
// cluster id under the user's configuration directory, never inside a
// checkout. `verdict cluster up` (and so `npm start`) makes the local CA and
// certificates of the cluster `local` there on its first start,
// `verdict certs` writes there by default, and the CLI and the SDK's
// localClusterTls() read them to reach the local cluster over mutual TLS.
//
//   $VERDICT_CONFIG_DIR/<cluster id>/        when VERDICT_CONFIG_DIR is set
//   $XDG_CONFIG_HOME/verdict/<cluster id>/   when XDG_CONFIG_HOME is set
//   ~/.config/verdict/<cluster id>/          otherwise
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { TlsSetupError, type TlsFiles } from './tls.ts';

/** The id of the cluster `verdict cluster up` runs (and the default of --cluster-id everywhere). */
export const LOCAL_CLUSTER_ID = 'local';
/** The admin certificate `verdict cluster up` makes; the CLI uses it for the local cluster. */
export const LOCAL_ADMIN = 'ops-admin';
/** The client certificate `verdict cluster up` makes; localClusterTls() returns it by default. */
export const LOCAL_CLIENT = 'alice';

type Env = Readonly<Record<string, string | undefined>>;

/** The folder of cluster `clusterId`'s CA and certificates on this machine. */
export function localCertsDir(clusterId: string = LOCAL_CLUSTER_ID, env: Env = process.env): string {
  const set = (v: string | undefined): v is string => v !== undefined && v !== '';
  const root = set(env.VERDICT_CONFIG_DIR)
    ? resolve(env.VERDICT_CONFIG_DIR)
    : join(
        set(env.XDG_CONFIG_HOME) && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(homedir(), '.config'),
        'verdict',
      );
  return join(root, clusterId);
}

/** The files of certificate `name` in the local cluster's folder, with its CA; null when any is missing. */
export function localCertFiles(name: string, env: Env = process.env): Required<TlsFiles> | null {
  const dir = localCertsDir(LOCAL_CLUSTER_ID, env);
  const files = { ca: join(dir, 'ca.crt'), cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  return Object.values(files).every((f) => existsSync(f)) ? files : null;
}

/**
 * The CA and certificate `name` of the local cluster (`npm start`), for the
 * SDK: `credentials: tlsCredentials(localClusterTls())` for a client (the
 * client certificate `alice` by default; `ops-admin` is the admin), or
 * `tls: localClusterTls('shop')` for a participant whose certificate was made
 * (`npm start` makes shop and ledger; `verdict certs --participant ID=HOST:PORT`
 * any other). Throws TlsSetupError saying how to make what is missing.
 */
export function localClusterTls(name: string = LOCAL_CLIENT, env: Env = process.env): Required<TlsFiles> {
  const files = localCertFiles(name, env);
  if (files !== null) return files;
  const dir = localCertsDir(LOCAL_CLUSTER_ID, env);
  if (!existsSync(join(dir, 'ca.crt')))
    throw new TlsSetupError(
      `the local cluster has no CA in ${dir} yet: \`npm start\` (verdict cluster up) makes it on its first start`,
    );
  throw new TlsSetupError(
    `the local cluster has no certificate "${name}" in ${dir}: make it with \`npx verdict certs --participant ${name}=127.0.0.1:PORT\` (a participant) or \`npx verdict certs --client ${name}\``,
  );
}
