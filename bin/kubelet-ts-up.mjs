#!/usr/bin/env node
import { registerSources } from './from-sources.mjs';
await registerSources();
await import('../tools/up.ts');
