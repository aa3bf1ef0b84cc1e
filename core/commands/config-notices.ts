/**
 * What loadConfig has to say besides errors (the settings kubelet-ts ignores, flags accepted
 * without effect), as the commands that load a configuration without starting print it: one
 * plain line each on stderr, so stdout stays the command's output. The kubelet itself logs them.
 */
import type { Writable } from 'node:stream';
import { loadConfig, type ConfigNotice } from '../config/load.ts';
import type { KubeletConfig } from '../config/types.ts';
import { loadOptionsOf, type KubeletCommandLine } from './kubelet-command-line.ts';

export function writeConfigNotices(notices: readonly ConfigNotice[], err: Writable): void {
  for (const n of notices) err.write(`kubelet-ts: ${n.level === 'warn' ? 'warning' : 'note'}: ${n.msg}\n`);
}

/** Loads the configuration of a command line as a start would, its notices written to `err` even when the load then fails. */
export async function loadConfigWithNotices(args: KubeletCommandLine, err: Writable): Promise<KubeletConfig> {
  const notices: ConfigNotice[] = [];
  try {
    return await loadConfig(loadOptionsOf(args, notices));
  } finally {
    // What a start would warn about, even when something later fails it.
    writeConfigNotices(notices, err);
  }
}
