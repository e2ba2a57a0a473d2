#!/usr/bin/env node
// `npm run bench [-- OPTIONS | -- TOOL OPTIONS]`: the benchmark's one entry
// point. The benchmark is TypeScript run through tsx, like the `verdict`
// command; this launcher registers tsx and hands over to bench/cli.ts, which
// reads the command line (`npm run bench -- --help` lists what it takes).
import { register } from 'tsx/esm/api';

register();
const { start } = await import('./cli.ts');
await start();
