#!/usr/bin/env node
// The `verdict` command. Verdict is written in TypeScript and runs on Node
// through tsx, so this launcher registers tsx and hands over to the CLI.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
