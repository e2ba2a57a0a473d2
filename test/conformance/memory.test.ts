// The conformance suite (checks.ts) against the participants of this
// repository that need no database: the TypeScript memory and TCC
// participants and the Python SDK's memory participant.
import { describeTarget } from './suite.ts';
import { pythonMemory, tsMemory, tsTcc } from './targets.ts';

describeTarget('TypeScript memory', () => tsMemory);
describeTarget('TypeScript TCC (memory)', () => tsTcc);
describeTarget('Python memory', () => pythonMemory());
