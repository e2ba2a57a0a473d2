#!/usr/bin/env node
// Runs bench/cli-status-run.ts through tsx, as bench/run.mjs runs the benchmark.
import { register } from 'tsx/esm/api';

register();
await import('./cli-status-run.ts');
