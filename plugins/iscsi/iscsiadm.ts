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

/**
 * Runs iscsiadm with `args` (no shell), killed at `timeoutMs` or when `signal` aborts. Its
 * error carries iscsiadm's own output, which says what the target or iscsid refused. `secret`
 * values (CHAP passwords) never appear in an error: the arguments are shown with them masked.
 */
export async function iscsiadm(bin: string, args: string[], call: { timeoutMs: number; signal?: AbortSignal; secret?: string }): Promise<string> {
  try {
    const { stdout } = await run(bin, args, { timeout: call.timeoutMs, killSignal: 'SIGKILL', ...(call.signal ? { signal: call.signal } : {}) });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; killed?: boolean; code?: unknown; message?: string };
    const shown = args.map((a) => (call.secret !== undefined && a === call.secret ? '***' : a)).join(' ');
    if (call.signal?.aborted) throw new Error(`iscsiadm ${shown}: given up (${String(call.signal.reason ?? 'aborted')})`);
    if (e.killed) throw new Error(`iscsiadm ${shown}: no answer within ${Math.round(call.timeoutMs / 1000)} s, killed`);
    const out = `${e.stderr ?? ''}${e.stdout ?? ''}`.trim() || e.message || String(err);
    throw new Error(`iscsiadm ${shown}: ${out.replaceAll(call.secret ?? '\0', '***')}`);
  }
}
