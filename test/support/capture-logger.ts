import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../core/logger.ts';

/** A debug-level kubelet logger whose JSON lines a test can read back as objects. */
export function captureLogger<Line = Record<string, unknown>>(level = 'debug'): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Line);
      done();
    },
  });
  return { logger: createLogger({ level, destination }), lines };
}
