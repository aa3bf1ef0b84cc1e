import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { CniError } from './errors.ts';
import { CNI_ERR, type CniCommand, type CniErrorBody } from './types.ts';

/** At most this much of a plugin's stdout or stderr is kept; the rest is dropped. */
const MAX_OUTPUT = 1 << 20;

/** Finds an executable named `type` in the directories, first match wins (libcni's FindInPath). */
export async function findPlugin(type: string, binDirs: readonly string[]): Promise<string | undefined> {
  for (const dir of binDirs) {
    const file = path.join(dir, type);
    try {
      const st = await fs.stat(file);
      if (st.isFile() && (st.mode & 0o111) !== 0) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** What one plugin invocation needs. */
export interface PluginExec {
  /** Full path of the plugin executable. */
  file: string;
  command: CniCommand;
  containerId: string;
  netns: string;
  ifName: string;
  /** `CNI_ARGS`, already joined (`K=V;K=V`). */
  args: string;
  /** `CNI_PATH`: where the plugin finds its delegates (host-local for bridge, ...). */
  binDirs: readonly string[];
  stdin: string;
  timeoutMs: number;
}

export interface ExecOutcome { exitCode: number; stdout: string; stderr: string }

/** Who is being run, for error messages. */
export interface ExecWhere { network: string; plugin: string; command: string }

/**
 * Runs one plugin as the spec says: the CNI_* variables in its environment (with the
 * kubelet's own PATH, which plugins such as portmap need to find iptables), the config on
 * stdin, the answer on stdout. A plugin that outlives `timeoutMs` is killed (its whole
 * process group, so children it started go too) and reported as such.
 */
export function execPlugin(p: PluginExec, where: ExecWhere): Promise<ExecOutcome> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('CNI_')) env[k] = v;
  Object.assign(env, {
    CNI_COMMAND: p.command,
    CNI_CONTAINERID: p.containerId,
    CNI_NETNS: p.netns,
    CNI_IFNAME: p.ifName,
    CNI_ARGS: p.args,
    CNI_PATH: p.binDirs.join(':'),
  });
  return new Promise((resolve, reject) => {
    const child = spawn(p.file, [], { env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outLen = 0;
    let errLen = 0;
    let timedOut = false;
    let settled = false;
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, p.timeoutMs);
    child.stdout.on('data', (d: Buffer) => {
      if (outLen < MAX_OUTPUT) out.push(d);
      outLen += d.length;
    });
    child.stderr.on('data', (d: Buffer) => {
      if (errLen < MAX_OUTPUT) err.push(d);
      errLen += d.length;
    });
    // A plugin that exits without reading its stdin must not fail the call with EPIPE.
    child.stdin.on('error', () => {});
    child.stdin.end(p.stdin);
    child.on('error', (e) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new CniError({ code: CNI_ERR.IO_FAILURE, msg: `cannot execute ${p.file}: ${e.message}` }, where));
    });
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (timedOut) {
        reject(new CniError({ code: CNI_ERR.TRY_AGAIN_LATER, msg: `did not answer within ${p.timeoutMs} ms and was killed` }, where));
        return;
      }
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      resolve({ exitCode: code ?? (signal ? 128 : 1), stdout, stderr: signal ? `${stderr}${stderr ? '\n' : ''}killed by ${signal}` : stderr });
    };
    child.on('close', finish);
    // A plugin that exited but left a child holding its stdout open: take what it printed
    // shortly after its exit rather than waiting for the child.
    child.on('exit', (code, signal) => {
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code, signal);
      }, 200).unref();
    });
  });
}

/** Parses a JSON object printed by a plugin; `undefined` if it is not one. */
export function parseJSONObject(text: string): Record<string, unknown> | undefined {
  const t = text.trim();
  if (!t.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(t);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A short, single-line excerpt of what a plugin printed, for messages. */
export function excerpt(text: string, max = 200): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max)}...` : one;
}

/**
 * Turns a failed invocation into a CniError: the plugin's own error object if it printed
 * one (on stdout as 1.0.0 says, or on stderr as older plugins do), else its exit code and
 * whatever it printed.
 */
export function failureOf(o: ExecOutcome, where: ExecWhere): CniError {
  for (const text of [o.stdout, o.stderr]) {
    const obj = parseJSONObject(text);
    if (obj && typeof obj.msg === 'string') {
      const body: CniErrorBody = { code: typeof obj.code === 'number' ? obj.code : CNI_ERR.IO_FAILURE, msg: obj.msg, ...(typeof obj.details === 'string' && obj.details ? { details: obj.details } : {}) };
      return new CniError(body, where);
    }
  }
  const printed = excerpt(o.stdout || o.stderr);
  return new CniError({ code: CNI_ERR.PLUGIN_MISBEHAVED, msg: `exited with code ${o.exitCode}${printed ? ` and printed no CNI error object: ${printed}` : ' without output'}` }, where);
}
