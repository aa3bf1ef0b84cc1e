/**
 * One run of an exec credential provider, as upstream's execPlugin runs it:
 *
 *     ENV=VALUE... <bin dir>/<name> args... <<< CredentialProviderRequest
 *
 * The request (`{"kind":"CredentialProviderRequest","apiVersion":<the provider's>,"image":<repository>}`)
 * goes to stdin; the CredentialProviderResponse comes back on stdout, JSON in the same apiVersion.
 * The environment is the kubelet's with the config's `env` on top. Bounded as upstream bounds it
 * (a catch-all timeout of one minute), and in what it may print: stdout beyond 1 MiB kills it.
 * The provider runs in a process group of its own, so that a timeout kills what it started too.
 *
 * Errors use upstream's wording (`error execing credential provider plugin NAME for image IMAGE:
 * exit status 1: <stderr>`); none quotes stdout, which may hold credentials.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { formatDuration } from 'kubelet-ts';
import { goDurationMs } from './provider-config.ts';

/** Upstream's catch-all timeout of an exec provider. */
export const EXEC_TIMEOUT_MS = 60_000;
/** The most a provider may print on stdout (a response is a few hundred bytes). */
export const MAX_STDOUT_BYTES = 2 ** 20;
/** How much of stderr is kept for the log (the event shows its first line). */
const MAX_STDERR_BYTES = 4096;
/** How long output may keep coming after the provider exited (a child it left holding the pipe). */
const CLOSE_GRACE_MS = 1000;

export type CacheKeyType = 'Image' | 'Registry' | 'Global';

/** A decoded CredentialProviderResponse. */
export interface ProviderResponse {
  cacheKeyType: CacheKeyType;
  /** The response's cacheDuration in ms (may be negative: expired at once); undefined when it gave none. */
  cacheDurationMs: number | undefined;
  /** Registry key (an image pattern) → credential. */
  auth: Map<string, { username: string; password: string }>;
}

/** What the run needs of a provider's config. */
export interface ExecSpec { name: string; apiVersion: string; args: readonly string[]; env: ReadonlyArray<{ name: string; value: string }> }

/** A failed run: the message (upstream's wording) and the provider's stderr, bounded, for the log. */
export class ProviderExecError extends Error {
  constructor(message: string, readonly stderr: string) {
    super(message);
    this.name = 'ProviderExecError';
  }
}

/** Printable text of a provider's output, for messages: control characters replaced. */
function printable(buf: Buffer): string {
  // eslint-disable-next-line no-control-regex
  return buf.toString('utf8').replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '?').trim();
}

/** The first line of stderr, at most 256 characters: what the pod's event shows. */
function stderrExcerpt(stderr: string): string {
  const line = stderr.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
  return line.length > 256 ? `${line.slice(0, 256)}...` : line;
}

/**
 * Runs the provider for `image` (a repository) and decodes its answer; rejects with a
 * {@link ProviderExecError} when it cannot start, fails, times out, prints too much or answers
 * something that is not a valid CredentialProviderResponse of its apiVersion.
 */
export function execProvider(spec: ExecSpec, binDir: string, image: string, opts: { timeoutMs?: number; maxStdoutBytes?: number; environ?: NodeJS.ProcessEnv } = {}): Promise<ProviderResponse> {
  const timeoutMs = opts.timeoutMs ?? EXEC_TIMEOUT_MS;
  const maxStdout = opts.maxStdoutBytes ?? MAX_STDOUT_BYTES;
  const prefix = `error execing credential provider plugin ${spec.name} for image ${image}`;
  const env: NodeJS.ProcessEnv = { ...(opts.environ ?? process.env) };
  for (const v of spec.env) env[v.name] = v.value;
  const request = `${JSON.stringify({ kind: 'CredentialProviderRequest', apiVersion: spec.apiVersion, image })}\n`;

  return new Promise<ProviderResponse>((resolve, reject) => {
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    const stderr: Buffer[] = [];
    let stderrBytes = 0;
    let failure: string | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;

    const child = spawn(path.join(binDir, spec.name), [...spec.args], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const stderrText = () => printable(Buffer.concat(stderr));
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(grace);
      child.stdout?.destroy();
      child.stderr?.destroy();
      const err = stderrText();
      if (failure) return reject(new ProviderExecError(`${prefix}: ${failure}`, err));
      if (!exit || exit.code !== 0) {
        const status = exit?.signal ? `signal: ${exit.signal === 'SIGKILL' ? 'killed' : exit.signal}` : `exit status ${exit?.code}`;
        const excerpt = stderrExcerpt(err);
        return reject(new ProviderExecError(`${prefix}: ${status}${excerpt ? `: ${excerpt}` : ''}`, err));
      }
      try {
        resolve(decodeResponse(Buffer.concat(stdout), spec.apiVersion));
      } catch (e) {
        reject(new ProviderExecError((e as Error).message, err));
      }
    };
    const fail = (message: string) => {
      failure ??= message;
      killGroup();
      finish();
    };
    const timer = setTimeout(() => fail(`did not answer within ${formatDuration(timeoutMs)} (context deadline exceeded)`), timeoutMs);
    let grace: NodeJS.Timeout | undefined;

    child.on('error', (err) => fail(err.message));
    child.stdout!.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxStdout) return fail(`its output exceeds ${maxStdout} bytes`);
      stdout.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (stderrBytes >= MAX_STDERR_BYTES) return;
      stderr.push(chunk.subarray(0, MAX_STDERR_BYTES - stderrBytes));
      stderrBytes += chunk.length;
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Normally 'close' follows at once; a child the provider left behind may hold the pipes open.
      grace = setTimeout(() => {
        killGroup();
        finish();
      }, CLOSE_GRACE_MS);
    });
    child.on('close', () => {
      if (exit) finish();
    });
    // A provider that exits without reading its stdin makes the write fail with EPIPE: its exit status says what happened.
    child.stdin!.on('error', () => {});
    child.stdin!.end(request);
  });
}

const RESPONSE_FIELDS = new Set(['kind', 'apiVersion', 'cacheKeyType', 'cacheDuration', 'auth']);
const CACHE_KEY_TYPES: readonly string[] = ['Image', 'Registry', 'Global'];

/**
 * A CredentialProviderResponse from stdout, decoded strictly. Problems are named by field; no
 * value is quoted but the apiVersion, as upstream's error quotes it (the rest may be credentials).
 */
export function decodeResponse(data: Buffer, apiVersion: string): ProviderResponse {
  const bad = (reason: string) => new Error(`error decoding credential provider plugin response from stdout: ${reason}`);
  let doc: unknown;
  try {
    doc = JSON.parse(data.toString('utf8'));
  } catch {
    throw new Error(`error reading GVK from response: the output is not JSON (${data.length} bytes)`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('error reading GVK from response: the output is not a JSON object');
  const o = doc as Record<string, unknown>;
  if (o.apiVersion !== apiVersion) {
    const actual = typeof o.apiVersion === 'string' ? o.apiVersion.slice(0, 100) : '';
    throw new Error(`apiVersion from credential plugin response did not match expected apiVersion:${apiVersion}, actual apiVersion:${actual}`);
  }
  for (const k of Object.keys(o)) if (!RESPONSE_FIELDS.has(k)) throw bad(`unknown field ${JSON.stringify(k.slice(0, 100))}`);
  if (o.kind !== 'CredentialProviderResponse') throw bad('kind is not "CredentialProviderResponse"');
  if (typeof o.cacheKeyType !== 'string' || !CACHE_KEY_TYPES.includes(o.cacheKeyType)) {
    const shown = typeof o.cacheKeyType === 'string' ? o.cacheKeyType.slice(0, 100) : '';
    throw new Error(`credential provider plugin did not return a valid cacheKeyType: ${JSON.stringify(shown)}`);
  }
  let cacheDurationMs: number | undefined;
  if (o.cacheDuration !== undefined && o.cacheDuration !== null) {
    cacheDurationMs = goDurationMs(o.cacheDuration);
    if (cacheDurationMs === undefined) throw bad('cacheDuration is not a Go duration such as "5m"');
  }
  const auth = new Map<string, { username: string; password: string }>();
  if (o.auth !== undefined && o.auth !== null) {
    if (typeof o.auth !== 'object' || Array.isArray(o.auth)) throw bad('auth is not a map');
    for (const [key, entry] of Object.entries(o.auth as Record<string, unknown>)) {
      const at = `auth[${JSON.stringify(key.slice(0, 100))}]`;
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw bad(`${at} is not an object`);
      const e = entry as Record<string, unknown>;
      for (const k of Object.keys(e)) if (k !== 'username' && k !== 'password') throw bad(`unknown field ${JSON.stringify(`${at}.${k.slice(0, 100)}`)}`);
      if (e.username !== undefined && typeof e.username !== 'string') throw bad(`${at}.username is not a string`);
      if (e.password !== undefined && typeof e.password !== 'string') throw bad(`${at}.password is not a string`);
      auth.set(key, { username: (e.username as string | undefined) ?? '', password: (e.password as string | undefined) ?? '' });
    }
  }
  return { cacheKeyType: o.cacheKeyType as CacheKeyType, cacheDurationMs, auth };
}
