/**
 * The start every client command (`pods`, `logs`, `explain`, `events`) shares: its flags
 * parsed (with `--root-dir` and `-h` added), a usage error printed with the command's usage
 * (exit 2), `-h` answered (exit 0), a required POD argument checked, and the local kubelet's
 * socket chosen (`--root-dir`, else the configured rootDir's).
 */
import type { Writable } from 'node:stream';
import { parseCommandArgs, UsageError, type CommandOptions } from './command-args.ts';
import { localSocketPath } from './local-kubelet.ts';

/** Where a client command talks and writes; tests pass their own streams. */
export interface ClientCommandIO {
  socketPath: string;
  stdout?: Writable;
  stderr?: Writable;
}

const COMMON = { 'root-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;

type Parsed<O extends CommandOptions> = ReturnType<typeof parseCommandArgs<O & typeof COMMON>>;

export interface ClientCommandSpec<O extends CommandOptions> {
  /** The command's name, as its messages start: `kubelet-ts <name>: ...`. */
  name: string;
  usage: string;
  /** Its own flags (`--root-dir` and `-h, --help` are added). */
  options: O;
  maxPositionals: number;
  /** What the first argument names when one is required (`a pod name (or UID prefix)`). */
  required?: string;
  /** Checks across flags; throws UsageError. */
  check?: (parsed: Parsed<O>) => void;
}

export type ClientCommandStart<O extends CommandOptions> =
  | { exit: number }
  | { values: Parsed<O>['values']; positionals: string[]; socketPath: string; out: Writable; err: Writable };

/** Parses a client command's argv; `{ exit }` when the command is done before it talks to the kubelet. */
export function startClientCommand<O extends CommandOptions>(spec: ClientCommandSpec<O>, argv: string[], io: ClientCommandIO): ClientCommandStart<O> {
  const out = io.stdout ?? process.stdout;
  const err = io.stderr ?? process.stderr;
  let parsed: Parsed<O>;
  try {
    parsed = parseCommandArgs(argv, { ...spec.options, ...COMMON }, spec.maxPositionals);
    spec.check?.(parsed);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err.write(`kubelet-ts ${spec.name}: ${e.message}\n\n${spec.usage}`);
    return { exit: 2 };
  }
  const values = parsed.values as Parsed<O>['values'] & { 'root-dir'?: string; help?: boolean };
  if (values.help) {
    out.write(spec.usage);
    return { exit: 0 };
  }
  if (spec.required && parsed.positionals.length < 1) {
    err.write(`kubelet-ts ${spec.name}: ${spec.required} is required\n\n${spec.usage}`);
    return { exit: 2 };
  }
  const socketPath = values['root-dir'] !== undefined ? localSocketPath(values['root-dir']) : io.socketPath;
  return { values: parsed.values, positionals: parsed.positionals, socketPath, out, err };
}
