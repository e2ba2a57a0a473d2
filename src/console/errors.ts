// Errors as an operator reads them on the console: the gRPC code's name and
// a sentence, never grpc-js's raw text ("14 UNAVAILABLE: No connection
// established. Last error: connect ECONNREFUSED 127.0.0.1:7001 (2026-...)").
// The raw text stays in the API's `raw` fields and in the node's log.

import * as grpc from '@grpc/grpc-js';

export interface ErrorSentence {
  /** The gRPC code's name ("UNAVAILABLE"); '' when the text carries none. */
  code: string;
  /** "UNAVAILABLE: the participant did not answer (...)" */
  sentence: string;
}

const SENTENCE_CHARS_MAX = 240;
/** grpc-js's (and src/transport/request-stream.ts's) message shape: "<number> <NAME>: <details>". */
const GRPC_TEXT = /^(\d{1,2}) ([A-Z_]+): ?([\s\S]*)$/;

/**
 * Details grpc-js (or the leader's own request stream) writes when a call
 * never got an answer: then the code's meaning is the sentence. Any other
 * details are the callee's own words (a participant answering UNAVAILABLE
 * because its disk failed), kept after the code.
 */
const NO_ANSWER_TEXT =
  /^(No connection established|Connection dropped|Deadline exceeded|Call cancelled|Cancelled on client|Received RST_STREAM|Failed to connect|failed to connect|Waiting for LB pick|the connection to participant .* is clos|participant .* did not answer .* in time|participant .* ended the stream|.*ECONNREFUSED|.*ECONNRESET|.*ETIMEDOUT)/;

/** What a code means for whoever was called (`who`: "the participant", "node n2"); null: the details say it best. */
function meaning(code: string, who: string): string | null {
  switch (code) {
    case 'UNAVAILABLE':
      return `${who} did not answer (not running, unreachable, or refusing connections)`;
    case 'DEADLINE_EXCEEDED':
      return `${who} did not answer in time`;
    case 'CANCELLED':
      return `the call was cancelled before ${who} answered`;
    case 'UNAUTHENTICATED':
      return `${who} did not accept this node's credentials`;
    default:
      return null;
  }
}

/** `text` (an error's message) as a sentence led by its gRPC code name. */
export function errorSentence(text: string, who: string): ErrorSentence {
  const m = GRPC_TEXT.exec(text.trim());
  if (m === null || grpc.status[m[2] as keyof typeof grpc.status] === undefined)
    return { code: '', sentence: clean(text) };
  const code = m[2]!;
  return { code, sentence: sentenceOf(code, clean(m[3] ?? ''), who) };
}

/** A grpc-js ServiceError (or any error) as a sentence; `who` names the callee. */
export function grpcErrorSentence(err: unknown, who = 'the node'): ErrorSentence {
  const e = err as Partial<grpc.ServiceError> | null;
  if (e !== null && typeof e === 'object' && typeof e.code === 'number' && grpc.status[e.code] !== undefined) {
    const code = grpc.status[e.code] as string;
    return { code, sentence: sentenceOf(code, clean(e.details ?? ''), who) };
  }
  return errorSentence(err instanceof Error ? err.message : String(err), who);
}

function sentenceOf(code: string, details: string, who: string): string {
  const said = details !== '' && !NO_ANSWER_TEXT.test(details);
  return `${code}: ${said ? details : (meaning(code, who) ?? 'no details given')}`;
}

function clean(s: string): string {
  return s.replace(/\s+/g, ' ').trim().slice(0, SENTENCE_CHARS_MAX);
}
