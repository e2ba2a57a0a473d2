// Types of scripts/gen-proto.mjs, for test/unit/gen-proto.test.ts.
export interface ProtoOptions {
  keepCase: boolean;
  longs: 'Number' | 'String';
  enums: 'Number' | 'String';
  defaults: boolean;
  oneofs: boolean;
}
export const ROOT: string;
export const GEN_DIR: string;
export const PROTO_OPTIONS: Record<string, ProtoOptions>;
export function generate(outDir: string): string[];
