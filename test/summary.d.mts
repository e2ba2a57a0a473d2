// Types of test/summary.mjs (plain JavaScript, so test/run.mjs runs without a loader).
export interface TestData {
  name: string;
  mode: 'run' | 'skip' | 'todo' | 'only' | string;
  state: 'passed' | 'failed' | 'skipped' | 'pending' | string;
  errors: string[];
  note: string | null;
  setupError: string | null;
}
export interface ModuleData {
  file: string;
  errors: string[];
  suites: { name: string; errors: string[] }[];
  tests: TestData[];
}
export interface RunData {
  modules: ModuleData[];
  unhandled: string[];
}
export interface Summary {
  passed: number;
  failed: number;
  failures: string[];
}
export function firstLine(text: unknown): string;
export function summarize(data: RunData): Summary;
export default class SummaryReporter {
  onTestRunEnd(testModules: readonly unknown[], unhandledErrors: readonly unknown[]): void;
}
