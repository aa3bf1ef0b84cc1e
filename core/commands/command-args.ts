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

type Options = NonNullable<ParseArgsConfig['options']>;
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
