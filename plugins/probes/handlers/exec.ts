import { TIMED_OUT, errorMessage, expandVars, isKubeletError, secondsToTimerMs, withTimeout, type ContainerRuntime, type Limiter } from 'kubelet-ts';
import type { V1Container } from '@kubernetes/client-node';
import { truncate, type ProbeRunResult, type ProbeTarget } from './types.ts';

/**
 * How long past its timeout an ExecSync may take before the worker stops waiting: the runtime
 * enforces the timeout itself (containerd answers DeadlineExceeded); this bounds a runtime that
 * does not, so a worker is never stuck.
 */
export const EXEC_DEADLINE_SLACK_MS = 2000;

/**
 * The runtime could not start the command (not found, not executable): containerd answers
 * ExecSync with an error (`OCI runtime exec failed: ... executable file not found in $PATH`)
 * instead of an exit code.
 */
const START_FAILED = /failed to start exec|OCI runtime exec failed|executable file not found|no such file or directory|permission denied/i;

/**
 * upstream ExpandContainerCommandOnlyStatic: `$(VAR)` in an exec probe's command expands to the
 * container's literal env values only (not valueFrom; the probe has no downward API).
 */
export function expandProbeCommand(command: string[], container: V1Container): string[] {
  const env = new Map<string, string>();
  for (const e of container.env ?? []) if (e.value !== undefined && e.value !== null) env.set(e.name, e.value);
  return command.map((arg) => expandVars(arg, (name) => env.get(name)));
}

/**
 * An exec probe through CRI ExecSync with the probe's timeout. Exit 0 is success, any other
 * exit a failure with the combined output. A command that outlives its timeout is a failure
 * (`command "..." timed out`, as upstream since ExecProbeTimeout went GA). A command the runtime
 * could not start is a failure with the runtime's message (upstream throws it away as an error,
 * kubernetes/kubernetes#106682, so a liveness probe naming a missing binary never fires there).
 * Other runtime errors (runtime unreachable, container gone) are errors: no state change.
 */
export async function execProbe(runtime: ContainerRuntime, target: ProbeTarget, command: string[], limiter?: Limiter): Promise<ProbeRunResult> {
  const cmd = expandProbeCommand(command, target.container);
  const timedOut = `command ${JSON.stringify(cmd.join(' '))} timed out`;
  const call = async (): Promise<ProbeRunResult> => {
    try {
      const r = await withTimeout(runtime.execSync(target.containerId, cmd, target.timeoutSeconds), secondsToTimerMs(target.timeoutSeconds + EXEC_DEADLINE_SLACK_MS / 1000), { unref: true });
      if (r === TIMED_OUT) return { result: 'failure', output: timedOut };
      const output = truncate(Buffer.concat([r.stdout, r.stderr]).toString('utf8'));
      return r.exitCode === 0 ? { result: 'success', output } : { result: 'failure', output };
    } catch (err) {
      if (isKubeletError(err) && err.code === 'DeadlineExceeded') return { result: 'failure', output: timedOut };
      const msg = errorMessage(err);
      const unreachable = isKubeletError(err) && err.code === 'Unavailable';
      if (!unreachable && START_FAILED.test(msg)) return { result: 'failure', output: msg };
      return { error: msg };
    }
  };
  return limiter ? limiter.run(call) : call();
}
