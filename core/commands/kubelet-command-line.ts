/**
 * The command line of `kubelet-ts [run]` and `kubelet-ts plugins`, read as upstream's kubelet
 * reads its own (Go's pflag): `--flag=value` and `--flag value`; a boolean flag alone is true
 * and takes a value only after `=` (`--rotate-certificates=false`); `-v 2`, `-v=2`, `-v2`;
 * list and map flags add up when repeated, other flags keep their last value. A flag that
 * neither upstream's kubelet nor kubelet-ts has is refused with the nearest name; a value that
 * is not of the flag's type is refused naming the flag, the value and what is allowed.
 */
import { ConfigError } from '../errors.ts';
import type { ConfigNotice, LoadConfigOptions } from '../config/load.ts';
import { UsageError } from './command-args.ts';
import { parseDuration } from '../util/duration.ts';
import { nearestName } from '../util/nearest-name.ts';
import { schemaAllowed } from '../config/kubelet-configuration.ts';
import { KUBELET_FLAGS, longNameOf, type FlagSetting, type FlagSpec } from '../config/upstream-flags.ts';

export interface KubeletCommandLine {
  /** The command word (`run` when none). */
  command: string;
  /** The words that are not flags, in order (the command word first); `config` reads its subcommand here. */
  positionals: string[];
  help: boolean;
  /** `--version` (`true`, `raw`, ...), when given. */
  version?: string;
  configFile?: string;
  pluginsConfig?: string;
  /** Every other flag, in the order first given. */
  settings: FlagSetting[];
}

/**
 * Parses the kubelet's command line. Throws UsageError for an unknown flag, a missing value or
 * extra words, and ConfigError for a value that is not of the flag's type.
 */
export function parseKubeletCommandLine(argv: string[], maxPositionals = 1): KubeletCommandLine {
  const positionals: string[] = [];
  const raw: Array<{ flag: string; value: string }> = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!token.startsWith('-') || token === '-') {
      // pflag would read `--rotate-certificates false` as the flag and a word: say what was meant.
      const prev = argv[i - 1];
      if (/^(true|false)$/i.test(token) && prev?.startsWith('--') && !prev.includes('=') && KUBELET_FLAGS[prev.slice(2)]?.type === 'bool') {
        throw new UsageError(`flag ${prev} is a boolean: write ${prev}=${token.toLowerCase()}, not ${prev} ${token}`);
      }
      positionals.push(token);
      continue;
    }
    let name: string;
    let value: string | undefined;
    if (token.startsWith('--')) {
      const eq = token.indexOf('=');
      name = eq < 0 ? token.slice(2) : token.slice(2, eq);
      value = eq < 0 ? undefined : token.slice(eq + 1);
      if (!Object.hasOwn(KUBELET_FLAGS, name)) throw unknownFlag(token);
    } else {
      // A one-letter flag: -v 2, -v=2, -v2, -h. Anything longer after one dash (-config) is a
      // mistake pflag would read as letters: name the long flag meant.
      const long = longNameOf(token[1]!);
      const rest = token.slice(2);
      if (long === undefined) throw unknownFlag(token);
      name = long;
      if (rest === '') value = undefined;
      else if (rest.startsWith('=')) value = rest.slice(1);
      else if (KUBELET_FLAGS[long]!.type !== 'bool' && /^\d+$/.test(rest)) value = rest;
      else throw unknownFlag(token);
    }
    const spec = KUBELET_FLAGS[name]!;
    if (value === undefined) {
      const implied = spec.type === 'bool' ? 'true' : spec.noValue;
      if (implied !== undefined) value = implied;
      else if (i + 1 < argv.length) value = argv[++i]!;
      else throw new UsageError(`flag --${name} needs a value`);
    }
    raw.push({ flag: name, value });
  }
  if (positionals.length > maxPositionals) {
    const extra = positionals.slice(maxPositionals);
    throw new UsageError(`unexpected argument${extra.length > 1 ? 's' : ''} ${extra.map((a) => `'${a}'`).join(', ')}`);
  }

  const out: KubeletCommandLine = { command: positionals[0] ?? 'run', positionals, help: false, settings: [] };
  const settings = new Map<string, FlagSetting>();
  for (const { flag, value } of raw) {
    const spec = KUBELET_FLAGS[flag]!;
    const spelling = `--${flag}`;
    if (flag === 'help') out.help = parseBool(value, spelling);
    else if (flag === 'version') out.version = value;
    else if (flag === 'config') out.configFile = value;
    else if (flag === 'plugins-config') out.pluginsConfig = value;
    else {
      const typed = parseFlagValue(spec, value, spelling);
      const prev = settings.get(flag);
      if (prev && Array.isArray(prev.value)) prev.value = [...prev.value, ...(typed as unknown[])];
      else if (prev && typed !== null && typeof typed === 'object') prev.value = mergeMaps(prev.value as Record<string, unknown>, typed as Record<string, unknown>);
      else if (prev) prev.value = typed;
      else settings.set(flag, { flag, spelling, value: typed });
    }
  }
  out.settings = [...settings.values()];
  return out;
}

/**
 * What loadConfig takes from a parsed command line: the same for `run`, `plugins` and `config
 * validate|view`, so they read one configuration alike. `notices` is filled by the load.
 */
export function loadOptionsOf(args: KubeletCommandLine, notices: ConfigNotice[]): LoadConfigOptions {
  return {
    ...(args.configFile !== undefined ? { configFile: args.configFile } : {}),
    ...(args.pluginsConfig !== undefined ? { pluginsConfig: args.pluginsConfig } : {}),
    settings: args.settings,
    notices,
  };
}

function mergeMaps(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = Array.isArray(out[k]) && Array.isArray(v) ? [...(out[k] as unknown[]), ...v] : v;
  return out;
}

function unknownFlag(token: string): UsageError {
  const bare = token.replace(/^-+/, '').split('=')[0]!;
  const near = nearestName(bare, Object.keys(KUBELET_FLAGS));
  return new UsageError(`unknown flag '${token.split('=')[0]}'${near ? ` (did you mean --${near}?)` : ''}`);
}

/** What the flag's field allows, from the config schema, for messages. */
function allowedFor(spec: FlagSpec): string | undefined {
  const target = spec.kubeletTs ?? spec.field;
  return target === undefined ? undefined : schemaAllowed(target);
}

/** Go's strconv.ParseBool, as pflag reads a boolean flag. */
function parseBool(value: string, spelling: string): boolean {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw new ConfigError(`${spelling}: '${value}' is not a boolean; allowed: true or false`);
}

/** Splits `a=1,b=2` (or `a<1`) into pairs, naming the flag and the pair that has no separator. */
function pairs(value: string, sep: string, spelling: string, example: string): Array<[string, string]> {
  if (value.trim() === '') return [];
  return value.split(',').map((pair) => {
    const at = pair.indexOf(sep);
    if (at <= 0) throw new ConfigError(`${spelling}: '${pair}' is not key${sep}value; allowed: ${example}`);
    return [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
  });
}

/** A flag's value, typed as its field takes it. */
export function parseFlagValue(spec: FlagSpec, value: string, spelling: string): unknown {
  const allowed = allowedFor(spec);
  const bad = (what: string) => new ConfigError(`${spelling}: '${value}' is not ${what}${allowed ? `; allowed: ${allowed}` : ''}`);
  switch (spec.type) {
    case 'string':
      return value;
    case 'bool':
      return parseBool(value, spelling);
    case 'int':
      if (!/^-?\d+$/.test(value.trim())) throw bad('an integer');
      if (spelling === '--v' && Number(value) < 0) throw bad('a verbosity >= 0');
      return Number(value);
    case 'number':
      if (value.trim() === '' || !Number.isFinite(Number(value))) throw bad('a number');
      return Number(value);
    case 'duration':
      try {
        parseDuration(value);
      } catch {
        throw bad("a duration such as '10s', '1m30s', '500ms'");
      }
      return value;
    case 'stringList':
      return value.trim() === '' ? [] : value.split(',').map((s) => s.trim());
    case 'stringMap':
      return Object.fromEntries(pairs(value, '=', spelling, 'key=value,key=value'));
    case 'langleMap':
      return Object.fromEntries(pairs(value, '<', spelling, 'signal<threshold, as in memory.available<100Mi,nodefs.available<10%'));
    case 'boolMap':
      return Object.fromEntries(pairs(value, '=', spelling, 'Name=true,Name=false').map(([k, v]) => [k, parseBool(v, `${spelling} ${k}`)]));
    case 'taints':
      return parseTaints(value, spelling);
    case 'headers':
      return Object.fromEntries(groupHeaders(pairs(value, ':', spelling, "'name:value,name:value', repeatable")));
  }
}

/** `key=value:Effect,key:Effect` as upstream's --register-with-taints takes it. */
function parseTaints(value: string, spelling: string): Array<{ key: string; value?: string; effect: string }> {
  if (value.trim() === '') return [];
  return value.split(',').map((spec) => {
    const colon = spec.lastIndexOf(':');
    if (colon <= 0) throw new ConfigError(`${spelling}: '${spec}' is not a taint; allowed: key=value:Effect or key:Effect, Effect one of NoSchedule, PreferNoSchedule, NoExecute`);
    const keyValue = spec.slice(0, colon);
    const effect = spec.slice(colon + 1);
    const eq = keyValue.indexOf('=');
    return eq < 0 ? { key: keyValue, effect } : { key: keyValue.slice(0, eq), value: keyValue.slice(eq + 1), effect };
  });
}

/** Header pairs to the name → values map staticPodURLHeader is (a name may repeat). */
function groupHeaders(list: Array<[string, string]>): Array<[string, string[]]> {
  const out = new Map<string, string[]>();
  for (const [k, v] of list) out.set(k, [...(out.get(k) ?? []), v]);
  return [...out];
}
