// The conformance suite against a participant of your own, in any language:
//
//   VERDICT_CONFORMANCE_TARGET=my-participant.json npx vitest run test/conformance/external.test.ts
//
// The file describes how to run it (target.ts, TargetSpec; docs/protocol.md,
// "Checking a participant in any language"). Without the variable, the file
// checks the same path with the Python SDK's participant described as data.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../process/harness.ts';
import { describeTarget } from './suite.ts';
import { specTarget, type TargetSpec } from './target.ts';

const file = process.env.VERDICT_CONFORMANCE_TARGET;
const example: TargetSpec = {
  name: 'Python memory, described as data',
  kind: 'memory',
  command: [
    '/usr/bin/python3',
    join(ROOT, 'sdk/python/tests/proc/conformance_participant.py'),
    '--id',
    '{participantId}',
    '--cluster-id',
    '{clusterId}',
    '--nodes',
    '{nodes}',
    '--listen',
    '{listen}',
    '--data',
    '{dataDir}',
    '--probe',
    '{probe}',
  ],
  tls: ['--tls', '{ca},{cert},{key}'],
  write: '{"set": {"{key}": "{value}"}}',
  read: 'probe',
};
const spec: TargetSpec = file ? (JSON.parse(readFileSync(file, 'utf8')) as TargetSpec) : example;

describeTarget(spec.name, () => specTarget(spec));
