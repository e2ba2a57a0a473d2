// One gRPC unary call over node:http2, without @grpc/grpc-js: what the CLI's
// `verdict status` uses, because loading grpc-js, protobufjs and the .proto
// files costs a cold process several hundred milliseconds, longer than the
// whole status round trip. It speaks the gRPC wire protocol over HTTP/2
// (a 5-byte prefix per message, grpc-status in the trailers) for one request
// and one response; everything else (streams, retries, compression, load
// balancing) stays with grpc-js.
//
// TLS is node:tls's, with the same checks grpc-js makes: the server's
// certificate must be signed by the given CA and name the address dialled
// (subjectAltName); the client certificate, if any, is presented. The server
// is a node (what `verdict status` dials), so its certificate must also
// carry the node mark (src/transport/tls.ts), as grpc-js clients check it.
//
// Failures reject with a CallError whose code is a gRPC status code and
// whose details say what happened, in the words src/transport/tls.ts
// (explainConnectError) knows how to explain.
import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { nodeRoleProblem } from './tls.ts';

/** The gRPC status codes this client produces or reads (the wire's numbers). */
export const Code = {
  OK: 0,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

export interface CallError extends Error {
  code: number;
  details: string;
}

export function callError(code: number, details: string): CallError {
  return Object.assign(new Error(`${code}: ${details}`), { code, details });
}

/** PEM buffers: the CA that signed the servers, and our certificate and key (both or neither). */
export interface H2Tls {
  ca: Buffer;
  cert: Buffer | null;
  key: Buffer | null;
}

/** The largest response accepted (gRPC's default receive limit is 4 MiB; a status is a few hundred bytes). */
export const RESPONSE_BYTES_MAX = 1 << 20;

/** `host:port` (a bracketed IPv6 host too) as an http(s) authority; null when it is not one. */
export function authority(address: string, tls: boolean): string | null {
  let url: URL;
  try {
    url = new URL(`${tls ? 'https' : 'http'}://${address}`);
  } catch {
    return null;
  }
  if (
    url.port === '' ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.username !== '' ||
    url.password !== '' ||
    `${url.host}` !== address.toLowerCase()
  )
    return null;
  return url.origin;
}

/**
 * node:tls's host check, then the node mark: a participant's or a client's certificate at a node's address is refused.
 */
function nodeServerIdentity(host: string, cert: PeerCertificate): Error | undefined {
  const hostErr = checkServerIdentity(host, cert);
  if (hostErr !== undefined) return hostErr;
  const problem = nodeRoleProblem(cert.subject);
  return problem === null ? undefined : new Error(`node at ${host} refused: its ${problem}`);
}

/** gRPC's percent-encoding of grpc-message, undone; undecodable text is kept as it came. */
function grpcMessage(raw: string | string[] | undefined): string {
  const s = Array.isArray(raw) ? raw[0] : raw;
  if (s === undefined) return '';
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Calls `path` (e.g. /verdict.raft.RaftNode/Status) on `address` with the
 * encoded request; resolves with the encoded response. Settles within
 * `timeoutMs`: the connection, the TLS handshake and the answer all count.
 */
export function unaryH2(
  address: string,
  path: string,
  request: Uint8Array,
  tls: H2Tls | null,
  timeoutMs: number,
): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const origin = authority(address, tls !== null);
    if (origin === null) return reject(callError(Code.UNAVAILABLE, `"${address}" is not a host:port address`));
    let session: ClientHttp2Session | null = null;
    let settled = false;
    const finish = (err: CallError | null, body?: Uint8Array): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session?.destroy();
      if (err !== null) reject(err);
      else resolve(body as Uint8Array);
    };
    const timer = setTimeout(
      () => finish(callError(Code.DEADLINE_EXCEEDED, `no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    // The Node error's text (ECONNREFUSED, a TLS alert, a certificate check) is what explainConnectError reads.
    // A stream cancelled by its session's failure carries that failure as its cause.
    const failConnect = (err: Error): void => {
      const cause =
        (err as NodeJS.ErrnoException).code === 'ERR_HTTP2_STREAM_CANCEL' && err.cause instanceof Error
          ? err.cause
          : err;
      finish(callError(Code.UNAVAILABLE, cause.message || String(cause)));
    };
    session = connect(
      origin,
      tls === null
        ? {}
        : {
            ca: tls.ca,
            ...(tls.cert !== null && tls.key !== null ? { cert: tls.cert, key: tls.key } : {}),
            checkServerIdentity: nodeServerIdentity,
          },
    );
    session.on('error', failConnect);
    // Closed before anything came back: a server going away, or a TLS server
    // that read our plaintext. Without even response headers, no gRPC
    // exchange took place; "Failed to connect" is grpc-js's word for it,
    // which explainConnectError turns into advice.
    let headers: IncomingHttpHeaders | null = null;
    const closedEarly = (): void =>
      finish(
        callError(
          Code.UNAVAILABLE,
          headers === null ? 'Failed to connect' : 'the connection closed before the answer was complete',
        ),
      );
    session.on('close', closedEarly);
    const timeoutUnit = `${Math.max(1, Math.ceil(timeoutMs))}m`;
    const stream = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: path,
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-timeout': timeoutUnit,
    });
    const frame = Buffer.alloc(5 + request.length);
    frame.writeUInt32BE(request.length, 1);
    frame.set(request, 5);
    stream.end(frame);

    const chunks: Buffer[] = [];
    let received = 0;
    stream.on('response', (h) => {
      headers = h;
    });
    stream.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > 5 + RESPONSE_BYTES_MAX)
        finish(callError(Code.RESOURCE_EXHAUSTED, `the response is larger than ${RESPONSE_BYTES_MAX} bytes`));
      else chunks.push(chunk);
    });
    stream.on('error', failConnect);
    let trailers: IncomingHttpHeaders = {};
    stream.on('trailers', (t) => {
      trailers = t;
    });
    stream.on('end', () => {
      if (headers === null) return closedEarly();
      // Node gives :status as a number, though its type says string.
      const httpStatus = Number(headers[constants.HTTP2_HEADER_STATUS]);
      if (httpStatus !== 200)
        return finish(callError(Code.UNKNOWN, `the server answered HTTP ${httpStatus}, not gRPC`));
      // A trailers-only answer carries grpc-status in the headers.
      const rawStatus = trailers['grpc-status'] ?? headers['grpc-status'];
      const code = Number(Array.isArray(rawStatus) ? rawStatus[0] : rawStatus);
      if (!Number.isInteger(code) || code < 0 || code > 16)
        return finish(callError(Code.INTERNAL, `the server's answer has no valid grpc-status (${String(rawStatus)})`));
      if (code !== Code.OK)
        return finish(callError(code, grpcMessage(trailers['grpc-message'] ?? headers['grpc-message'])));
      const body = Buffer.concat(chunks);
      if (body.length < 5)
        return finish(
          callError(Code.INTERNAL, `the answer is ${body.length} bytes, shorter than a gRPC message prefix`),
        );
      if (body[0] !== 0)
        return finish(callError(Code.INTERNAL, 'the answer is compressed, which this client did not ask for'));
      const length = body.readUInt32BE(1);
      if (length !== body.length - 5)
        return finish(
          callError(
            Code.INTERNAL,
            `the answer is one message of ${length} bytes in ${body.length - 5} bytes: not one unary response`,
          ),
        );
      finish(null, body.subarray(5));
    });
  });
}
