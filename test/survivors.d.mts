// Types of test/survivors.mjs (plain JavaScript, so test/run.mjs runs without a loader).
export const MARKER: string;
export interface Survivor {
  pid: number;
  command: string;
}
export function survivors(runId: string, exceptPids?: number[]): Survivor[];
export function reapSurvivors(runId: string, graceMs?: number): Promise<Survivor[]>;
