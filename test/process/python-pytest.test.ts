// The Python SDK's pytest suite (sdk/python/tests) as part of `npm test`:
// each pytest test is one vitest test here (test/process/pytest-kit.ts).
import { describePytest } from './pytest-kit.ts';

describePytest('sdk/python pytest', 'tests');
