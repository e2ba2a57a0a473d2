// Stopping a gRPC server the same way everywhere.
import type * as grpc from '@grpc/grpc-js';

/** Lets calls in flight finish for a moment, then cuts the rest (long-lived streams such as a health Watch). */
export function shutdownServer(server: grpc.Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(t);
      resolve();
    });
  });
}
