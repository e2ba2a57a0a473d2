// The console's own listener (config key consoleListen). With the node's TLS
// it is HTTPS with the same rule as the gRPC port: the browser must present
// a client certificate signed by the cluster's CA (mutual TLS), and the CN
// of that certificate is who acts (an admin when it is in tls.adminNames).
// Without TLS it is plain HTTP, like the rest of such a node.
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { TLSSocket } from 'node:tls';
import { listenHttp, type HttpListener } from '../transport/ops.ts';

export type ConsoleServer = HttpListener;

export class ConsoleListenError extends Error {}

/** The CN of the request's verified client certificate; undefined on plain HTTP or without one. */
export function clientCertificateName(req: IncomingMessage): string | undefined {
  const s = req.socket;
  if (!(s instanceof TLSSocket) || !s.authorized) return undefined;
  const cn = s.getPeerCertificate()?.subject?.CN;
  return typeof cn === 'string' ? cn : undefined;
}

export function isTlsRequest(req: IncomingMessage): boolean {
  return req.socket instanceof TLSSocket;
}

export function serveConsole(
  listen: string,
  handle: (req: IncomingMessage, res: ServerResponse) => boolean,
  tls: { ca: string; cert: string; key: string } | null,
): Promise<ConsoleServer> {
  const answer = (req: IncomingMessage, res: ServerResponse): void => {
    if (handle(req, res)) return;
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: the console is at /\n');
  };
  const server: Server =
    tls === null
      ? createHttpServer(answer)
      : createHttpsServer(
          // Files were checked when the node loaded its TLS (src/node/node-tls.ts).
          {
            ca: readFileSync(tls.ca),
            cert: readFileSync(tls.cert),
            key: readFileSync(tls.key),
            requestCert: true,
            rejectUnauthorized: true,
            minVersion: 'TLSv1.2',
          },
          answer,
        );
  return listenHttp(
    server,
    listen,
    (why) => new ConsoleListenError(`cannot listen on ${listen} for the console: ${why}; check "consoleListen"`),
  );
}
