/**
 * What loadConfig has to say besides errors (the settings kubelet-ts ignores, flags accepted
 * without effect), as the commands that load a configuration without starting print it: one
 * plain line each on stderr, so stdout stays the command's output. The kubelet itself logs them.
 */
import type { Writable } from 'node:stream';
import type { ConfigNotice } from '../config/load.ts';

export function writeConfigNotices(notices: readonly ConfigNotice[], err: Writable): void {
  for (const n of notices) err.write(`kubelet-ts: ${n.level === 'warn' ? 'warning' : 'note'}: ${n.msg}\n`);
}
