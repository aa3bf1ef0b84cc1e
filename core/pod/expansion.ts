/**
 * `$(VAR)` expansion in command, args and env values, with the upstream rules
 * (third_party/forked/golang/expansion): `$(NAME)` becomes the variable's value when it is
 * defined and stays as written when it is not; `$$` is an escaped `$` (so `$$(NAME)` yields
 * the literal `$(NAME)`); any other `$` is kept.
 */
export function expandVars(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input[i]!;
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input[i + 1]!;
    if (next === '$') {
      out += '$';
      i++;
      continue;
    }
    if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close === -1) {
        // An unclosed reference is kept as written.
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, close);
      const value = name ? lookup(name) : undefined;
      out += value === undefined ? `$(${name})` : value;
      i = close;
      continue;
    }
    out += '$';
  }
  return out;
}
