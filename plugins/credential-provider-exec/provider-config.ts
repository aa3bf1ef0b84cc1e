/**
 * Upstream's CredentialProviderConfig (`kubelet.config.k8s.io/v1`; v1beta1 and v1alpha1 have the
 * same shape and are read too, as the 1.28 kubelet reads them), from the file of
 * `--image-credential-provider-config`, or every *.json, *.yaml and *.yml file of a directory in
 * lexical order (upstream 1.34). Decoded strictly (an unknown field is an error, as upstream's
 * strict decoder has it) and validated with upstream's rules; every error names the file and the
 * field, in upstream's field-error wording, and all of them are reported at once.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, imagePatternProblem, parseDuration, parseYamlDocument } from 'kubelet-ts';

/** The versions of CredentialProviderConfig this plugin reads. */
export const CONFIG_API_VERSIONS = ['kubelet.config.k8s.io/v1', 'kubelet.config.k8s.io/v1beta1', 'kubelet.config.k8s.io/v1alpha1'] as const;
/** The versions of the exec protocol (CredentialProviderRequest/Response) a provider may speak. */
export const EXEC_API_VERSIONS = ['credentialprovider.kubelet.k8s.io/v1', 'credentialprovider.kubelet.k8s.io/v1beta1', 'credentialprovider.kubelet.k8s.io/v1alpha1'] as const;

/** A config file larger than this is refused before it is read (the YAML reader's own limit). */
const MAX_CONFIG_BYTES = 3 * 2 ** 20;

/** One exec credential provider, validated (upstream's CredentialProvider). */
export interface CredentialProviderSpec {
  /** The executable's name in the bin dir; unique. */
  name: string;
  /** Images it serves (scheme-less URL patterns, `*` per domain label). */
  matchImages: string[];
  /** How long an answer without its own cacheDuration is cached; 0: not cached. */
  defaultCacheDurationMs: number;
  /** The exec protocol version, credentialprovider.kubelet.k8s.io/v1 (or v1beta1, v1alpha1). */
  apiVersion: string;
  args: string[];
  env: Array<{ name: string; value: string }>;
  /** The file it was read from (for messages). */
  file: string;
}

const PROVIDER_FIELDS = new Set(['name', 'matchImages', 'defaultCacheDuration', 'apiVersion', 'args', 'env', 'tokenAttributes']);
const TOP_FIELDS = new Set(['apiVersion', 'kind', 'providers']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const quoted = (v: unknown) => JSON.stringify(typeof v === 'string' && v.length > 200 ? `${v.slice(0, 200)}...` : v);

/** A Go duration (metav1.Duration: a string such as '12h', '1m30s'; a sign allowed) in ms; undefined if it is not one. */
export function goDurationMs(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const sign = value.startsWith('-') ? -1 : 1;
  const body = value.startsWith('-') || value.startsWith('+') ? value.slice(1) : value;
  try {
    return sign * parseDuration(body);
  } catch {
    return undefined;
  }
}

/** Decodes and validates one file's providers; pushes an error per problem (`file: field: reason`). */
function decodeConfig(doc: unknown, file: string, errors: string[]): CredentialProviderSpec[] {
  const err = (field: string, message: string) => errors.push(`${file}: ${field}: ${message}`);
  if (!isObject(doc)) {
    errors.push(`${file}: the file holds no CredentialProviderConfig object`);
    return [];
  }
  for (const k of Object.keys(doc)) if (!TOP_FIELDS.has(k)) errors.push(`${file}: unknown field ${quoted(k)}`);
  if (doc.kind !== 'CredentialProviderConfig') err('kind', doc.kind === undefined ? 'Required value: "CredentialProviderConfig"' : `Unsupported value: ${quoted(doc.kind)}: supported values: "CredentialProviderConfig"`);
  if (!(CONFIG_API_VERSIONS as readonly unknown[]).includes(doc.apiVersion)) {
    const supported = CONFIG_API_VERSIONS.map((v) => `"${v}"`).join(', ');
    err('apiVersion', doc.apiVersion === undefined ? `Required value: one of ${supported}` : `Unsupported value: ${quoted(doc.apiVersion)}: supported values: ${supported}`);
  }
  if (doc.providers !== undefined && !Array.isArray(doc.providers)) {
    err('providers', 'Invalid value: must be a list of providers');
    return [];
  }
  const out: CredentialProviderSpec[] = [];
  for (const [i, p] of ((doc.providers as unknown[] | undefined) ?? []).entries()) {
    const at = `providers[${i}]`;
    if (!isObject(p)) {
      err(at, 'Invalid value: must be an object');
      continue;
    }
    for (const k of Object.keys(p)) if (!PROVIDER_FIELDS.has(k)) errors.push(`${file}: unknown field ${quoted(`${at}.${k}`)}`);
    const spec = decodeProvider(p, at, file, err);
    if (spec) out.push(spec);
  }
  return out;
}

/** One provider's fields, each checked as upstream's validateCredentialProviderConfig checks it. */
function decodeProvider(p: Record<string, unknown>, at: string, file: string, err: (field: string, message: string) => void): CredentialProviderSpec | undefined {
  let ok = true;
  const fail = (field: string, message: string) => {
    ok = false;
    err(`${at}.${field}`, message);
  };
  const name = p.name;
  if (typeof name !== 'string' || name === '') fail('name', typeof name === 'string' || name === undefined ? 'Required value' : 'Invalid value: must be a string');
  else {
    if (name.includes('/')) fail('name', `Invalid value: ${quoted(name)}: provider name cannot contain '/'`);
    if (name.includes(' ')) fail('name', `Invalid value: ${quoted(name)}: provider name cannot contain spaces`);
    if (name.includes('\0')) fail('name', `Invalid value: ${quoted(name)}: provider name cannot contain NUL`);
    if (name === '.' || name === '..') fail('name', `Invalid value: ${quoted(name)}: provider name cannot be '${name}'`);
  }
  const apiVersion = p.apiVersion;
  if (apiVersion === undefined || apiVersion === '') fail('apiVersion', 'Required value');
  else if (!(EXEC_API_VERSIONS as readonly unknown[]).includes(apiVersion)) {
    fail('apiVersion', `Unsupported value: ${quoted(apiVersion)}: supported values: ${EXEC_API_VERSIONS.map((v) => `"${v}"`).join(', ')}`);
  }
  const matchImages = p.matchImages;
  if (matchImages !== undefined && (!Array.isArray(matchImages) || matchImages.some((m) => typeof m !== 'string'))) fail('matchImages', 'Invalid value: must be a list of strings');
  else if (!matchImages || matchImages.length === 0) fail('matchImages', 'Required value: at least 1 item in matchImages is required');
  else {
    for (const [j, m] of (matchImages as string[]).entries()) {
      const problem = imagePatternProblem(m);
      if (problem) fail(`matchImages[${j}]`, `Invalid value: ${quoted(m)}: match image is invalid: ${problem}`);
    }
  }
  const duration = p.defaultCacheDuration;
  const durationMs = goDurationMs(duration);
  if (duration === undefined || duration === null) fail('defaultCacheDuration', 'Required value');
  else if (durationMs === undefined) fail('defaultCacheDuration', `Invalid value: ${quoted(duration)}: must be a Go duration such as '12h', '5m', '0s'`);
  else if (durationMs < 0) fail('defaultCacheDuration', `Invalid value: ${quoted(duration)}: defaultCacheDuration must be greater than or equal to 0`);
  const args = p.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string' || a.includes('\0'))) fail('args', 'Invalid value: must be a list of strings (without NUL characters)');
  const env = p.env ?? [];
  if (!Array.isArray(env)) fail('env', 'Invalid value: must be a list of {name, value}');
  else {
    for (const [j, e] of env.entries()) {
      if (!isObject(e)) fail(`env[${j}]`, 'Invalid value: must be an object {name, value}');
      else {
        for (const k of Object.keys(e)) if (k !== 'name' && k !== 'value') fail(`env[${j}]`, `unknown field ${quoted(k)}`);
        if (typeof e.name !== 'string' || e.name === '' || /[=\0]/.test(e.name)) fail(`env[${j}].name`, e.name === undefined ? 'Required value' : 'Invalid value: must be a variable name (a non-empty string without "=" or NUL)');
        if (typeof e.value !== 'string' || e.value.includes('\0')) fail(`env[${j}].value`, e.value === undefined ? 'Required value' : 'Invalid value: must be a string (without NUL characters)');
      }
    }
  }
  // Upstream 1.33 (KubeletServiceAccountTokenForCredentialProviders): a pod's service account token for the provider.
  if (p.tokenAttributes !== undefined) fail('tokenAttributes', 'Forbidden: service account tokens for credential providers are not supported by kubelet-ts');
  if (!ok) return undefined;
  return {
    name: name as string,
    matchImages: matchImages as string[],
    defaultCacheDurationMs: durationMs!,
    apiVersion: apiVersion as string,
    args: args as string[],
    env: (env as Array<{ name: string; value: string }>).map((e) => ({ name: e.name, value: e.value })),
    file,
  };
}

/** The config files of `configPath`: itself, or a directory's *.json, *.yaml and *.yml files in lexical order. */
async function configFiles(configPath: string): Promise<string[]> {
  let stat;
  try {
    stat = await fs.stat(configPath);
  } catch (err) {
    throw new Error(`${configPath}: unable to access the credential provider config: ${errorMessage(err)}`);
  }
  if (!stat.isDirectory()) return [configPath];
  const names = (await fs.readdir(configPath)).filter((n) => /\.(json|ya?ml)$/.test(n)).sort();
  const files: string[] = [];
  for (const n of names) if ((await fs.stat(path.join(configPath, n)).catch(() => undefined))?.isFile()) files.push(path.join(configPath, n));
  if (files.length === 0) throw new Error(`${configPath}: no configuration files found in directory (*.json, *.yaml, *.yml)`);
  return files;
}

/** One file's text: a regular file of bounded size (a FIFO or a device would block the start, a huge file fill memory). */
async function readConfigText(file: string): Promise<string> {
  const stat = await fs.stat(file);
  if (!stat.isFile()) throw new Error(`${file}: not a regular file`);
  if (stat.size > MAX_CONFIG_BYTES) throw new Error(`${file}: larger than ${MAX_CONFIG_BYTES} bytes`);
  return fs.readFile(file, 'utf8');
}

/**
 * Reads and validates the credential providers of `configPath` (a file, or a directory of files
 * merged in lexical order). Throws one error listing every problem, each naming its file and field.
 */
export async function readCredentialProviderConfig(configPath: string): Promise<CredentialProviderSpec[]> {
  const errors: string[] = [];
  const providers: CredentialProviderSpec[] = [];
  for (const file of await configFiles(configPath)) {
    let doc: unknown;
    try {
      doc = parseYamlDocument(await readConfigText(file));
    } catch (err) {
      errors.push(`${file}: ${errorMessage(err)}`);
      continue;
    }
    for (const spec of decodeConfig(doc, file, errors)) {
      const twin = providers.find((p) => p.name === spec.name);
      if (twin) errors.push(`${spec.file}: providers.name: Duplicate value: ${quoted(spec.name)}${twin.file !== spec.file ? ` (also in ${twin.file})` : ''}`);
      else providers.push(spec);
    }
  }
  // Checked once every file is read, as upstream validates the merged config: an empty file beside a full one is fine.
  if (errors.length === 0 && providers.length === 0) errors.push(`${configPath}: providers: Required value: at least 1 item in plugins is required`);
  if (errors.length) throw new Error(`invalid credential provider config:\n${errors.join('\n')}`);
  return providers;
}

/**
 * Upstream's start checks of the bin dir: it exists, and each provider's executable is in it
 * (a file with an execute bit, as Go's exec.LookPath finds one).
 */
export async function checkProviderBinaries(binDir: string, providers: readonly CredentialProviderSpec[]): Promise<void> {
  const dir = await fs.stat(binDir).catch(() => undefined);
  if (!dir) throw new Error(`plugin binary directory ${binDir} did not exist (imageCredentialProviderBinDir, --image-credential-provider-bin-dir)`);
  if (!dir.isDirectory()) throw new Error(`plugin binary directory ${binDir} is not a directory (imageCredentialProviderBinDir, --image-credential-provider-bin-dir)`);
  const problems: string[] = [];
  for (const p of providers) {
    const bin = path.join(binDir, p.name);
    const stat = await fs.stat(bin).catch(() => undefined);
    if (!stat) problems.push(`plugin binary executable ${bin} did not exist (provider "${p.name}" of ${p.file})`);
    else if (!stat.isFile() || (stat.mode & 0o111) === 0) problems.push(`plugin binary executable ${bin} is not an executable file (provider "${p.name}" of ${p.file})`);
  }
  if (problems.length) throw new Error(problems.join('\n'));
}
