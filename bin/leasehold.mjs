#!/usr/bin/env node
// `npx leasehold …` inside this repository: runs the CLI from its TypeScript source
// (client/src/cli/main.ts) through tsx, so no build is needed. The published package `leasehold`
// ships the compiled CLI instead (client/package.json "bin": dist/cli/main.js).
import { register } from 'tsx/esm/api';

register();
await import('../client/src/cli/main.ts');
