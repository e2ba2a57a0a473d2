// Nothing a test run starts may outlive it. `npm test` puts a marker in the
// environment of every vitest it starts (VERDICT_TEST_RUN=<run id>); every
// process a test starts inherits it (nodes, participants, relays,
// PostgreSQL, MariaDB, NATS, Chromium), so after the run any process still
// carrying the marker is a survivor: the runner names it, kills it, and
// fails the run. Linux only (/proc); elsewhere nothing is found.
import { readdirSync, readFileSync } from 'node:fs';

export const MARKER = 'VERDICT_TEST_RUN';

/** Processes whose environment holds MARKER=runId, other than `exceptPids`: [{ pid, command }]. */
export function survivors(runId, exceptPids = [process.pid]) {
  const needle = Buffer.from(`\0${MARKER}=${runId}\0`);
  const first = Buffer.from(`${MARKER}=${runId}\0`);
  const out = [];
  let entries = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (exceptPids.includes(pid)) continue;
    let env;
    try {
      env = readFileSync(`/proc/${pid}/environ`);
    } catch {
      continue; // gone, or not ours to read
    }
    if (env.indexOf(needle) < 0 && env.subarray(0, first.length).compare(first) !== 0) continue;
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      // gone meanwhile
    }
    if (command === '') continue; // a zombie or gone: nothing runs
    out.push({ pid, command: command.length > 200 ? `${command.slice(0, 200)}…` : command });
  }
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits up to `graceMs` for the marked processes to end on their own (a
 * stop sent at the very end of a file may still be in progress), then kills
 * what is left with SIGKILL and returns it.
 */
export async function reapSurvivors(runId, graceMs = 10_000) {
  const deadline = Date.now() + graceMs;
  let left = survivors(runId);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(250);
    left = survivors(runId);
  }
  for (const s of left) {
    try {
      process.kill(s.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return left;
}
