/**
 * Flag parsing for every kubelet-ts command, on top of node:util parseArgs, with errors in the
 * words an operator expects (`unknown flag '--pod-manifest-dir' (did you mean
 * --pod-manifest-path?)`) instead of parseArgs' own text, which talks about "options" and
 * "positional arguments" and suggests `--` quoting that no kubelet-ts command needs.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { nearestName } from '../util/nearest-name.ts';

/** A command line that cannot be run: the message says what is wrong, in one line. */
export class UsageError extends Error {}

/** A command's flags, as node:util parseArgs declares them. */
export type CommandOptions = NonNullable<ParseArgsConfig['options']>;
type Options = CommandOptions;
/** What parseCommandArgs returns, spelled out: the declaration build (.d.ts) cannot name parseArgs' own inferred type. */
type ParsedCommandArgs<O extends Options> = ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>>;

/**
 * Parses `argv` against `options`. Throws UsageError for an unknown flag (naming the closest
 * known one), a flag without its value, a value given to a boolean flag, or more positional
 * arguments than `maxPositionals` (extra words are refused, never ignored).
 */
export function parseCommandArgs<O extends Options>(argv: string[], options: O, maxPositionals: number): ParsedCommandArgs<O> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(describeParseError(err as NodeJS.ErrnoException, options));
  }
  if (parsed.positionals.length > maxPositionals) {
    const extra = parsed.positionals.slice(maxPositionals).map((a) => `'${a}'`).join(', ');
    throw new UsageError(maxPositionals === 0 ? `unexpected argument ${extra}: this command takes flags only` : `unexpected argument${parsed.positionals.length - maxPositionals > 1 ? 's' : ''} ${extra}`);
  }
  return parsed;
}

function describeParseError(err: NodeJS.ErrnoException, options: Options): string {
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const name = /Unknown option '([^']+)'/.exec(err.message)?.[1] ?? '?';
      const near = closestFlag(name, options);
      return `unknown flag '${name}'${near ? ` (did you mean ${near}?)` : ''}`;
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      // parseArgs says "argument missing" for a string flag without its value, and "does not
      // take an argument" for --bool=value.
      const long = /--([\w-]+)/.exec(err.message)?.[1];
      const flag = long ? `--${long}` : 'a flag';
      return /does not take an argument/.test(err.message) ? `flag ${flag} takes no value` : `flag ${flag} needs a value`;
    }
    default:
      return err.message;
  }
}

/** The known flag nearest to `given` by edit distance, when it is close enough to be a typo. */
function closestFlag(given: string, options: Options): string | undefined {
  const near = nearestName(given.replace(/^-+/, '').split('=')[0]!, Object.keys(options));
  return near === undefined ? undefined : `--${near}`;
}

/** The -o, --output flag of a command that prints objects, as kubectl's. */
export const OUTPUT_OPTION = { output: { type: 'string', short: 'o' } } as const;

/** An -o value checked against the formats a command prints: undefined when not given; UsageError naming them otherwise. */
export function outputFormat<F extends string>(value: string | undefined, allowed: readonly F[]): F | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`--output: '${value}' is not a format; allowed: ${allowed.join(', ')}`);
  return value as F;
}

/**
 * Takes -o, --output out of a command line that another parser reads (the kubelet's flags for
 * `config view`): `-o json`, `-ojson`, `-o=json`, `--output json`, `--output=json`; the last
 * one given wins, as a repeated flag does. Throws UsageError for one without its value.
 */
export function takeOutputFlag(argv: string[]): { output: string | undefined; rest: string[] } {
  const rest: string[] = [];
  let output: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    const inline = /^(?:--output=|-o=?)(.+)$/.exec(token);
    if (inline) output = inline[1]!;
    else if (token === '-o' || token === '--output') {
      if (i + 1 >= argv.length) throw new UsageError('flag --output needs a value');
      output = argv[++i]!;
    } else rest.push(token);
  }
  return { output, rest };
}
