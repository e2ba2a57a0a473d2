// A node binds its port before it has recovered its log (so a port in use is
// refused at once, and a port of 0 is known to the parts that name their own
// address), but its services exist only once recovery is done. grpc-js
// answers a call for a service it does not have with UNIMPLEMENTED, which a
// caller reads as "this will never work" (a participant's registration gave
// up for good on it). So the node adds every service at bind time through a
// gate: until the gate opens, each method answers UNAVAILABLE with a reason,
// which callers retry; once open, each call goes to the real handler.
//
// The gate's definition is the edge-checked one (guardService), built from
// the same request bound the real handlers are checked with, so a request
// is decoded the same way before and after the gate opens.
import * as grpc from '@grpc/grpc-js';
import { guardService } from './validate.ts';

type AnyHandler = (call: GateCall, cb?: (err: Partial<grpc.StatusObject> | null) => void) => void;
interface GateCall {
  emit(ev: string, ...a: unknown[]): boolean;
}

/** What a call to a node that is still starting is told. */
export const STARTING_DETAILS = 'the node is starting (recovering its log); retry shortly';

export interface ServiceGate<H extends grpc.UntypedServiceImplementation> {
  /** Sends every call to `implementation` from now on (its methods already edge-checked by guardService). */
  open(implementation: H): void;
  readonly isOpen: boolean;
}

/**
 * Adds `definition` to `server` behind a gate: UNAVAILABLE until open(),
 * then the implementation given to open() (a method it lacks answers
 * UNIMPLEMENTED, as grpc-js would).
 */
export function gatedService<H extends grpc.UntypedServiceImplementation>(
  server: grpc.Server,
  definition: grpc.ServiceDefinition<H>,
  requestBytesMax: number,
): ServiceGate<H> {
  const guarded = guardService(definition, {} as H, { requestBytesMax }).definition;
  let target: Record<string, AnyHandler> | null = null;
  const implementation: Record<string, AnyHandler> = {};
  for (const [name, m] of Object.entries(definition as Record<string, grpc.MethodDefinition<unknown, unknown>>)) {
    // A unary or client-streaming handler answers through its callback; a server- or bidi-streaming one through the
    // call.
    const answersByCallback = !m.responseStream;
    implementation[name] = (call, cb) => {
      const h = target?.[name];
      if (h !== undefined) return h(call, cb);
      const err =
        target === null
          ? { code: grpc.status.UNAVAILABLE, details: STARTING_DETAILS }
          : { code: grpc.status.UNIMPLEMENTED, details: `${name} is not implemented by this node` };
      if (answersByCallback && cb !== undefined) cb(err);
      else call.emit('error', err);
    };
  }
  server.addService(guarded, implementation as unknown as H);
  return {
    open(impl: H) {
      target = impl as unknown as Record<string, AnyHandler>;
    },
    get isOpen() {
      return target !== null;
    },
  };
}
