#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx: no build step between an edit and a node.
import { register } from 'tsx/esm/api';

register();
await import('../core/cli.ts');
