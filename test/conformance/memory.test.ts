// The conformance suite (checks.ts) against the participants of this
// repository that need no database: the TypeScript memory and TCC
// participants and the Python SDK's memory and TCC participants.
import { describeTarget } from './suite.ts';
import { pythonMemory, pythonTcc, tsMemory, tsTcc } from './targets.ts';

describeTarget('TypeScript memory', () => tsMemory);
describeTarget('TypeScript TCC (memory)', () => tsTcc);
describeTarget('Python memory', () => pythonMemory());
describeTarget('Python TCC (memory)', () => pythonTcc);
