import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import path from 'node:path';

/** What a driver call answers (upstream's DriverStatus); `status` is Success, Failure or Not supported. */
export interface DriverStatus {
  status: string;
  message?: string;
  capabilities?: { attach?: boolean; selinuxRelabel?: boolean; fsGroup?: boolean; supportsMetrics?: boolean; requiresFSResize?: boolean };
}

/** A driver call the driver does not implement: the caller falls back to upstream's default behaviour. */
export class NotSupported extends Error {}

/** `vendor/name` or `name`, each part a plain name: it becomes a directory and a program under the plugin dir. */
const DRIVER = /^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,62}\/)?[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/**
 * A FlexVolume driver as upstream finds it: `vendor/name` is the program
 * `<pluginDir>/vendor~name/name`, a bare `name` is `<pluginDir>/name/name`.
 */
export function driverExecutable(pluginDir: string, driver: string): string {
  if (!DRIVER.test(driver) || driver.split('/').some((p) => p === '.' || p === '..')) throw new Error(`flexVolume.driver ${JSON.stringify(driver)} is not vendor/name (letters, digits, ".", "_", "-")`);
  const name = driver.includes('/') ? driver.split('/')[1]! : driver;
  return path.join(pluginDir, driver.replace('/', '~'), name);
}

/**
 * Runs one driver call (`<exe> <command> <args...>`, no shell) and reads its JSON answer from
 * stdout, as upstream does from the combined output when stdout is not JSON. A Failure, a
 * non-JSON answer, a non-zero exit with no answer, and a call past `timeoutMs` are errors
 * naming the driver and the command; "Not supported" is a NotSupported.
 */
export async function callDriver(exe: string, command: string, args: string[], call: { timeoutMs: number; signal?: AbortSignal }): Promise<DriverStatus> {
  const info = await stat(exe).catch(() => undefined);
  if (!info?.isFile()) throw new Error(`FlexVolume driver ${exe} is not installed (no such file)`);
  if ((info.mode & 0o111) === 0) throw new Error(`FlexVolume driver ${exe} is not executable`);
  const { stdout, stderr, error } = await new Promise<{ stdout: string; stderr: string; error: (Error & { killed?: boolean; code?: unknown }) | null }>((resolve) => {
    execFile(exe, [command, ...args], { timeout: call.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 1 << 20, ...(call.signal ? { signal: call.signal } : {}) }, (err, out, errOut) => resolve({ stdout: String(out), stderr: String(errOut), error: err }));
  });
  if (call.signal?.aborted) throw new Error(`FlexVolume driver ${exe} ${command}: given up (${String(call.signal.reason ?? 'aborted')})`);
  if (error?.killed) throw new Error(`FlexVolume driver ${exe} ${command}: no answer within ${Math.round(call.timeoutMs / 1000)} s, killed`);
  const answer = parse(stdout) ?? parse(`${stdout}${stderr}`);
  if (!answer) {
    const out = `${stdout}${stderr}`.trim().slice(0, 500);
    throw new Error(`FlexVolume driver ${exe} ${command}: ${error ? `exit ${String(error.code)}, ` : ''}no JSON status in its output${out ? `: ${JSON.stringify(out)}` : ''}`);
  }
  if (answer.status === 'Not supported') throw new NotSupported(`FlexVolume driver ${exe} does not support ${command}`);
  if (answer.status !== 'Success') throw new Error(`FlexVolume driver ${exe} ${command} failed, status: ${answer.status}, reason: ${answer.message ?? ''}`);
  return answer;
}

function parse(text: string): DriverStatus | undefined {
  const t = text.trim();
  if (!t.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(t) as unknown;
    return v && typeof v === 'object' && typeof (v as DriverStatus).status === 'string' ? (v as DriverStatus) : undefined;
  } catch {
    return undefined;
  }
}
