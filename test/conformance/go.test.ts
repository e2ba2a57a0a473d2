// The conformance suite (checks.ts) against the Go SDK's participant
// (sdk/go/participant) with its memory resource, as the driver
// sdk/go/internal/testproc/conformance runs it; built offline from Debian's
// Go packages before the suite starts (test/process/go-procs.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { buildGoDrivers } from '../process/go-procs.ts';
import { describeTarget } from './suite.ts';
import { goMemory } from './targets.ts';

const BUILD_MS = 300_000;

let bin = '';
beforeAll(() => {
  bin = mkdtempSync(join(tmpdir(), 'verdict-go-conformance-'));
  buildGoDrivers(bin, ['conformance']);
}, BUILD_MS);
afterAll(() => {
  if (bin !== '') rmSync(bin, { recursive: true, force: true });
});

describeTarget('Go memory', () => goMemory(join(bin, 'conformance')));
