#!/usr/bin/env node
// `npm run bench`: the benchmark is TypeScript run through tsx, like the
// `verdict` command; this launcher registers tsx and hands over.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
