import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * An exec image credential provider for tests: a /bin/sh script in a bin dir that does what a
 * real provider does (reads the CredentialProviderRequest on stdin, answers on stdout) and
 * records each run (its request, arguments and one environment variable) in `<name>.runs`, one
 * JSON line per run, so a test sees what the kubelet sent and how often it ran the provider.
 */
export interface FakeProviderBehaviour {
  /** What it prints on stdout: an object (as JSON) or raw text. */
  response?: object | string;
  /** Its exit status. Default 0. */
  exitCode?: number;
  /** What it prints on stderr. */
  stderr?: string;
  /** Seconds it sleeps (in a child process, as a real provider's network call would) before answering. */
  sleepSeconds?: number;
  /** The environment variable whose value each run records. Default FAKE_PROVIDER_ENV. */
  recordEnv?: string;
}

export interface FakeProviderRun { request: string; args: string[]; env: string }

/** A CredentialProviderResponse (credentialprovider.kubelet.k8s.io/v1) giving `user`/`password` for `key`. */
export function providerResponse(key: string, user: string, password: string, extra: { cacheKeyType?: string; cacheDuration?: string } = {}): object {
  return {
    kind: 'CredentialProviderResponse',
    apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
    cacheKeyType: extra.cacheKeyType ?? 'Image',
    ...(extra.cacheDuration !== undefined ? { cacheDuration: extra.cacheDuration } : {}),
    auth: { [key]: { username: user, password } },
  };
}

const shQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Writes (or rewrites) the provider `name` into `binDir`, executable; returns a reader of its runs. */
export async function writeFakeProvider(binDir: string, name: string, behaviour: FakeProviderBehaviour): Promise<{ runs(): Promise<FakeProviderRun[]> }> {
  await fs.mkdir(binDir, { recursive: true });
  const base = path.join(binDir, name);
  const responseFile = `${base}.response`;
  const runsFile = `${base}.runs`;
  const response = behaviour.response === undefined ? '' : typeof behaviour.response === 'string' ? behaviour.response : JSON.stringify(behaviour.response);
  await fs.writeFile(responseFile, response);
  const envName = behaviour.recordEnv ?? 'FAKE_PROVIDER_ENV';
  const script = [
    '#!/bin/sh',
    'request=$(cat)',
    // One JSON line per run; the request is JSON already, args and env are quoted by printf %s with escapes done by sed.
    'esc() { printf %s "$1" | sed \'s/\\\\/\\\\\\\\/g; s/"/\\\\"/g\'; }',
    'args=""; for a in "$@"; do args="$args${args:+,}\\"$(esc "$a")\\""; done',
    `printf '{"request":"%s","args":[%s],"env":"%s"}\\n' "$(esc "$request")" "$args" "$(esc "\${${envName}:-}")" >> ${shQuote(runsFile)}`,
    behaviour.sleepSeconds ? `sleep ${behaviour.sleepSeconds}` : '',
    behaviour.stderr ? `printf '%s\\n' ${shQuote(behaviour.stderr)} >&2` : '',
    `cat ${shQuote(responseFile)}`,
    `exit ${behaviour.exitCode ?? 0}`,
    '',
  ].join('\n');
  const tmp = `${base}.tmp`;
  await fs.writeFile(tmp, script, { mode: 0o755 });
  await fs.rename(tmp, base);
  return {
    async runs() {
      const text = await fs.readFile(runsFile, 'utf8').catch(() => '');
      return text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as FakeProviderRun);
    },
  };
}

/** A CredentialProviderConfig (kubelet.config.k8s.io/v1) of `providers`, as JSON text. */
export function providerConfig(providers: object[]): string {
  return JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1', kind: 'CredentialProviderConfig', providers }, null, 2);
}
