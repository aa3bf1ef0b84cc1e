/**
 * YAML (and JSON, which is YAML) text to plain values, for objects read from files: hostile
 * input. The text is read with the YAML 1.1 scalars Kubernetes reads (./yaml-schema.ts: `0400`
 * is octal, `yes` is true), within the API server's limits (./document-limits.ts: 3 MiB, also
 * once aliases are expanded, and 100 levels of nesting), and a syntax error is reported by
 * line, column and reason only: the parser's own message quotes the lines around the error,
 * and the file may be anything a symlink points to.
 */
import yaml from 'js-yaml';
import { KUBERNETES_YAML_SCHEMA } from './yaml-schema.ts';
import { MAX_DEPTH, MAX_DOCUMENT_BYTES, expandedSizeProblem } from './document-limits.ts';

/**
 * A document that cannot be decoded: bad syntax (with the 1-based line and column), or a
 * limit exceeded. The message holds the position and the reason, never text of the document.
 */
export class DocumentError extends Error {
  constructor(
    readonly reason: string,
    readonly line?: number,
    readonly column?: number,
  ) {
    super(line === undefined ? reason : `line ${line}, column ${column}: ${reason}`);
    this.name = 'DocumentError';
  }
}

/**
 * The parser's reasons are fixed phrases, but a few quote the document (an alias or tag name,
 * an unknown escape): a quoted part longer than a short name is cut, so the reason cannot
 * carry the file's content into a log.
 */
function sanitizeReason(reason: string): string {
  const cut = (s: string) => (s.length > 16 ? `${s.slice(0, 16)}...` : s);
  return reason
    .replace(/!<tag:yaml\.org,2002:([a-z]+)>/g, '!!$1')
    .replace(/"([^"]*)"/g, (_m, q: string) => `"${cut(q)}"`)
    .replace(/!<([^>]*)>/g, (_m, q: string) => `!<${cut(q)}>`)
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 200);
}

/**
 * js-yaml (4.3+) stops at `maxDepth` levels of nesting before its recursive descent gets deep,
 * and charges every key a merge (`<<`) copies against `maxTotalMergeKeys`, so repeated merges
 * of a large mapping cannot keep the parser busy; @types/js-yaml does not list either yet.
 * `json: false` keeps a duplicate key an error, as kubectl's default strict validation has it.
 */
const LOAD_OPTIONS: yaml.LoadOptions & { maxDepth: number; maxTotalMergeKeys: number } = {
  schema: KUBERNETES_YAML_SCHEMA,
  maxDepth: MAX_DEPTH,
  maxTotalMergeKeys: 10_000,
  json: false,
};

/**
 * Parses a YAML (or JSON) stream into its documents, leaving out the empty ones (only
 * comments, or `null`). Throws a {@link DocumentError} for bad syntax, a text larger than
 * {@link MAX_DOCUMENT_BYTES}, nesting deeper than {@link MAX_DEPTH}, merge keys beyond the
 * parser's budget, or a document that expands (aliases resolved) beyond those limits.
 */
export function parseYamlDocuments(text: string): unknown[] {
  if (typeof text !== 'string') throw new DocumentError(`expected text, got ${typeof text}`);
  // A JS string's length is in UTF-16 units: at most 3 bytes of UTF-8 each, at least 1.
  if (text.length > MAX_DOCUMENT_BYTES || (text.length * 3 > MAX_DOCUMENT_BYTES && Buffer.byteLength(text, 'utf8') > MAX_DOCUMENT_BYTES)) {
    throw new DocumentError(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  }
  let docs: unknown[];
  try {
    docs = yaml.loadAll(text, undefined, LOAD_OPTIONS);
  } catch (err) {
    if (err instanceof yaml.YAMLException) {
      const mark = (err as yaml.YAMLException & { mark?: { line?: number; column?: number } }).mark;
      const line = typeof mark?.line === 'number' ? mark.line + 1 : undefined;
      const column = typeof mark?.column === 'number' ? mark.column + 1 : undefined;
      throw new DocumentError(sanitizeReason(String(err.reason ?? 'invalid YAML')), line, column);
    }
    // Not the parser's own error (a bug, or the stack): report it without its message either.
    throw new DocumentError(`the parser failed (${err instanceof Error ? err.name : typeof err})`);
  }
  const nonEmpty = docs.filter((d) => d !== null && d !== undefined);
  for (const doc of nonEmpty) {
    const problem = expandedSizeProblem(doc);
    if (problem !== undefined) throw new DocumentError(problem);
  }
  return nonEmpty;
}

/**
 * Parses one YAML (or JSON) document: undefined for an empty text. Throws a
 * {@link DocumentError} (line and column, no document text) for bad syntax, exceeded limits
 * and more than one document.
 */
export function parseYamlDocument(text: string): unknown {
  const docs = parseYamlDocuments(text);
  if (docs.length > 1) throw new DocumentError(`expected one document, found ${docs.length}`);
  return docs[0];
}
