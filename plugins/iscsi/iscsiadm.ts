import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where Debian's open-iscsi (and other distributions) install iscsiadm. */
const ISCSIADM = ['/sbin/iscsiadm', '/usr/sbin/iscsiadm', '/usr/bin/iscsiadm'];

/** The node's iscsiadm, or an error naming the package. */
export async function findIscsiadm(): Promise<string> {
  for (const p of ISCSIADM) if (await access(p).then(() => true, () => false)) return p;
  throw new Error(`iscsiadm is not installed on this node (${ISCSIADM.join(', ')}; Debian package open-iscsi, with iscsid running)`);
}

/** An iscsiadm call that failed: `timedOut` when it was killed at its timeout, `exitCode` iscsiadm's own. */
export class IscsiadmError extends Error {
  constructor(message: string, readonly timedOut: boolean, readonly exitCode?: number) {
    super(message);
    this.name = 'IscsiadmError';
  }
}

/**
 * Runs iscsiadm with `args` (no shell), killed at `timeoutMs`. Its error carries iscsiadm's
 * own output, which says what the target or iscsid refused. `secret` values (CHAP passwords)
 * never appear in an error: the arguments are shown with them masked.
 *
 * `signal` (the pod's sync giving up) is not a kill: an aborted call is not started, but one
 * that runs is let finish within its timeout. iscsiadm killed in the middle of a login leaves
 * iscsid logging in to a session nobody waits for (its node record then cannot be deleted:
 * "session exists"), and killed while it writes the node database, that database's lock file
 * (lock.write), which every later iscsiadm waits 30 s for and then fails.
 */
export async function iscsiadm(bin: string, args: string[], call: { timeoutMs: number; signal?: AbortSignal; secret?: string }): Promise<string> {
  const shown = args.map((a) => (call.secret !== undefined && a === call.secret ? '***' : a)).join(' ');
  if (call.signal?.aborted) throw new IscsiadmError(`iscsiadm ${shown}: given up (${String(call.signal.reason ?? 'aborted')})`, false);
  try {
    const { stdout } = await run(bin, args, { timeout: call.timeoutMs, killSignal: 'SIGKILL' });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; killed?: boolean; code?: unknown; message?: string };
    if (e.killed) throw new IscsiadmError(`iscsiadm ${shown}: no answer within ${Math.round(call.timeoutMs / 1000)} s, killed`, true);
    const out = `${e.stderr ?? ''}${e.stdout ?? ''}`.trim() || e.message || String(err);
    throw new IscsiadmError(`iscsiadm ${shown}: ${out.replaceAll(call.secret ?? '\0', '***')}`, false, typeof e.code === 'number' ? e.code : undefined);
  }
}
