/**
 * The name syntaxes of the Kubernetes API (k8s.io/apimachinery/pkg/util/validation): each
 * check returns upstream's messages for what is wrong with a value, empty when it is valid.
 * Callers prefix them with the field path and the value.
 */
import { isIP } from 'node:net';

/** upstream RegexError: the message, examples and the regex the value must match. */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`;
}

export const maxLenError = (n: number) => `must be no more than ${n} characters`;

/**
 * A value this much longer than any name is refused for its length alone, without running the
 * patterns over it (they are linear, but a manifest may hold megabytes in one key).
 */
const SCAN_LIMIT = 4096;
const matches = (re: RegExp, value: string) => value.length > SCAN_LIMIT || re.test(value);
export const inclusiveRangeError = (lo: number, hi: number) => `must be between ${lo} and ${hi}, inclusive`;

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_LABEL = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_LABEL_MSG = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
export const DNS1123_LABEL_MAX = 63;

export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123_LABEL_MAX) errs.push(maxLenError(DNS1123_LABEL_MAX));
  if (!matches(DNS1123_LABEL, value)) errs.push(regexError(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, 'my-name', '123-abc'));
  return errs;
}

const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1123_SUBDOMAIN_MSG = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
export const DNS1123_SUBDOMAIN_MAX = 253;

export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123_SUBDOMAIN_MAX) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX));
  if (!matches(DNS1123_SUBDOMAIN, value)) errs.push(regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errs;
}

const QNAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const QNAME = new RegExp(`^${QNAME_FMT}$`);
const QNAME_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QNAME_MAX = 63;

/** A label, annotation or finalizer key: `[prefix/]name`, the prefix a DNS subdomain. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDNS1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [`a qualified name ${regexError(QNAME_MSG, QNAME_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > QNAME_MAX) errs.push(`name part ${maxLenError(QNAME_MAX)}`);
  if (!matches(QNAME, name)) errs.push(`name part ${regexError(QNAME_MSG, QNAME_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

const LABEL_VALUE_FMT = `(${QNAME_FMT})?`;
const LABEL_VALUE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const LABEL_VALUE_MSG = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push(maxLenError(63));
  if (!matches(LABEL_VALUE, value)) errs.push(regexError(LABEL_VALUE_MSG, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  return errs;
}

/** A named port (IANA_SVC_NAME). */
export function isValidPortName(port: string): string[] {
  const errs: string[] = [];
  if (port.length > 15) errs.push(maxLenError(15));
  if (!/^[-a-z0-9]+$/.test(port)) errs.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(port)) errs.push('must contain at least one letter (a-z)');
  if (port.includes('--')) errs.push('must not contain consecutive hyphens');
  if (port.startsWith('-') || port.endsWith('-')) errs.push('must not begin or end with a hyphen');
  return errs;
}

export function isValidPortNum(port: number): string[] {
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? [] : [inclusiveRangeError(1, 65535)];
}

export function isValidIP(value: string): string[] {
  // No address is longer than 45 characters (IPv6 with an IPv4 tail); longer text is not parsed.
  return value.length > 45 || isIP(value) === 0 ? ['must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'] : [];
}

/**
 * An environment variable name, as upstream's RelaxedEnvironmentVariableValidation (on by
 * default since 1.32) has it: printable ASCII other than '='.
 */
export function isEnvVarName(value: string): string[] {
  return /^[\x20-\x3c\x3e-\x7e]+$/.test(value) ? [] : ["a valid environment variable name must consist only of printable ASCII characters other than '='"];
}

const CONFIG_MAP_KEY_FMT = '[-._a-zA-Z0-9]+';
const CONFIG_MAP_KEY = new RegExp(`^${CONFIG_MAP_KEY_FMT}$`);

/** A key of a ConfigMap or Secret. */
export function isConfigMapKey(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123_SUBDOMAIN_MAX) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX));
  if (!matches(CONFIG_MAP_KEY, value)) errs.push(regexError("a valid config key must consist of alphanumeric characters, '-', '_' or '.'", CONFIG_MAP_KEY_FMT, 'key.name', 'KEY_NAME', 'key-name'));
  if (value === '.') errs.push("must not be '.'");
  else if (value === '..') errs.push("must not be '..'");
  else if (value.startsWith('..')) errs.push("must not start with '..'");
  return errs;
}

export function isHTTPHeaderName(value: string): string[] {
  return /^[-A-Za-z0-9]+$/.test(value) ? [] : [regexError("a valid HTTP header must consist of alphanumeric characters or '-'", '[-A-Za-z0-9]+', 'X-Header-Name')];
}

const SYSCTL_FMT = '^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$';
const SYSCTL = new RegExp(SYSCTL_FMT);

export function isValidSysctlName(value: string): string[] {
  return value.length <= 253 && SYSCTL.test(value) ? [] : [`must have at most 253 characters and match regex ${SYSCTL_FMT}`];
}

/** A user or group ID: upstream IsValidUserID / IsValidGroupID. */
export function isValidID(id: number): string[] {
  return Number.isInteger(id) && id >= 0 && id <= 2147483647 ? [] : [inclusiveRangeError(0, 2147483647)];
}

/** A path inside a volume: relative and without '..' elements (validateLocalDescendingPath). */
export function localDescendingPath(p: string): string[] {
  const errs: string[] = [];
  if (p.startsWith('/')) errs.push('must be a relative path');
  if (p.split(/[\\/]/).includes('..')) errs.push("must not contain '..'");
  return errs;
}

/** A projected file path: a local descending path that does not start with '..' (validateLocalNonReservedPath). */
export function localNonReservedPath(p: string): string[] {
  const errs = localDescendingPath(p);
  if (p.startsWith('..') && !p.startsWith('../')) errs.push("must not start with '..'");
  return errs;
}
