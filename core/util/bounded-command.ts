import { spawn } from 'node:child_process';

/**
 * A command that may hang in the kernel (umount or statfs of a network file system whose
 * server is gone), run so that the kubelet never hangs with it:
 *
 * - It is killed (SIGKILL) at `timeoutMs` or when `signal` aborts. NFS waits are killable
 *   (TASK_KILLABLE), so the kill ends it even while it waits for the server.
 * - The result comes when the process exits, not when its pipes close: a helper it forked
 *   (umount runs umount.nfs) may outlive it holding stdout and stderr, and waiting for those
 *   to close (what execFile does) would wait for the helper's server.
 * - Nothing runs in the kubelet's own thread pool: a statfs there would hold one of libuv's
 *   four threads until the server answers, and four such calls stop every file operation of
 *   the kubelet.
 */
export interface BoundedResult {
  /** The exit code (null when killed by a signal). */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Killed at `timeoutMs`. */
  timedOut: boolean;
  /** Killed because `signal` aborted. */
  aborted: boolean;
}

/** How much of each stream is kept: these commands print a line or two. */
const MAX_OUTPUT = 64 * 1024;
/** How long the pipes may stay open after the process exited. */
const PIPE_GRACE_MS = 200;

/** Runs `command` with `args` (no shell), killed at `timeoutMs` (when given) or when `signal` aborts. */
export function runBounded(command: string, args: readonly string[], opts: { timeoutMs?: number; signal?: AbortSignal }): Promise<BoundedResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let aborted = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => { if (stdout.length < MAX_OUTPUT) stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { if (stderr.length < MAX_OUTPUT) stderr += d; });
    const kill = () => child.kill('SIGKILL');
    const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => { timedOut = true; kill(); }, Math.max(0, opts.timeoutMs));
    const onAbort = () => { aborted = true; kill(); };
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    child.once('error', (err) => {
      done();
      reject(err);
    });
    child.once('exit', (code) => {
      done();
      // The pipes' last bytes may come just after the exit; a helper still holding them (their
      // close never comes) is given PIPE_GRACE_MS, then the answer is what was read.
      let open = 2;
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        clearTimeout(grace);
        child.stdout.destroy();
        child.stderr.destroy();
        resolve({ code, stdout, stderr, timedOut, aborted });
      };
      const grace = setTimeout(finish, PIPE_GRACE_MS);
      const closed = () => { if (--open === 0) finish(); };
      if (child.stdout.readableEnded) closed(); else child.stdout.once('end', closed);
      if (child.stderr.readableEnded) closed(); else child.stderr.once('end', closed);
    });
  });
}

/**
 * The error of a bounded command that did not succeed (`what` is its command line as the
 * caller shows it), or undefined when it exited 0: one wording for every caller.
 */
export function boundedFailure(what: string, r: BoundedResult, opts: { timeoutMs?: number; signal?: AbortSignal }): Error | undefined {
  if (r.aborted) return new Error(`${what}: given up (${String(opts.signal?.reason ?? 'aborted')})`);
  if (r.timedOut) {
    const ms = opts.timeoutMs ?? 0;
    return new Error(`${what}: no answer within ${ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`}, killed`);
  }
  if (r.code !== 0) return new Error(`${what}: ${r.stderr.trim() || `exit ${r.code}`}`);
  return undefined;
}
