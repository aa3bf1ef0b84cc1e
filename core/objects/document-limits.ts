/**
 * Size limits of a decoded document, alias expansion included.
 *
 * The YAML parser resolves an alias (`*a`) to the very object its anchor (`&a`) built, so a
 * parsed document is a graph with shared nodes, as small as the text. Everything after the
 * parser (dropping unknown fields, validation, cloning, hashing, serving the pod) walks it as
 * a tree, expanding every shared node again: nine levels of `&a [*b, *b, ...]` are gigabytes.
 * The check below measures the expanded tree on the graph, visiting each shared node once, so
 * a document is refused in time linear in its text, before anything expands it.
 *
 * The limits are the API server's: a request body of at most 3 MiB (what `kubectl apply` would
 * send for this document is its expanded JSON), and the nesting depth a parser of ours already
 * caps in the text.
 */

/** The API server's request body limit (apiserver MaxRequestBodyBytes: 3 MiB). */
export const MAX_DOCUMENT_BYTES = 3 * 1024 * 1024;

/**
 * Nesting depth of collections and scalars. The deepest field of a v1 Pod is about a dozen
 * levels down (spec.containers[].livenessProbe.httpGet.httpHeaders[].name is 9); the limit
 * keeps every recursive walk of a document far from the stack's end.
 */
export const MAX_DEPTH = 100;

interface Extent {
  /** Bytes of the node as compact JSON (strings counted without escapes). */
  bytes: number;
  /** Levels of the node: 1 for a scalar. */
  depth: number;
}

class LimitExceeded extends Error {}

/**
 * Why `value` (a parsed YAML/JSON document) is too large once its aliases are expanded, or
 * undefined if it is within {@link MAX_DOCUMENT_BYTES} as JSON and {@link MAX_DEPTH} levels.
 */
export function expandedSizeProblem(value: unknown, limits = { maxBytes: MAX_DOCUMENT_BYTES, maxDepth: MAX_DEPTH }): string | undefined {
  const known = new Map<object, Extent>();
  const inProgress = new Set<object>();
  let shared = false;

  // `level` is the depth at which `v` sits: the walk stops before recursing past the limit,
  // so its own stack stays within maxDepth frames whatever the graph.
  const measure = (v: unknown, level: number): Extent => {
    if (level > limits.maxDepth) throw new LimitExceeded(`nesting is deeper than ${limits.maxDepth} levels`);
    if (v === null || typeof v !== 'object') return { bytes: scalarBytes(v), depth: 1 };
    const seen = known.get(v);
    if (seen) {
      shared = true;
      if (level + seen.depth - 1 > limits.maxDepth) throw new LimitExceeded(`nesting is deeper than ${limits.maxDepth} levels once aliases are expanded`);
      return seen;
    }
    // The parser cannot build a cycle, but a graph from elsewhere could: refuse, never loop.
    if (inProgress.has(v)) throw new LimitExceeded('the document refers to itself');
    inProgress.add(v);
    let bytes = 2;
    let depth = 1;
    const add = (child: Extent, extra: number) => {
      bytes += child.bytes + extra;
      depth = Math.max(depth, child.depth + 1);
      if (bytes > limits.maxBytes) throw new LimitExceeded(tooLarge(limits.maxBytes, shared));
    };
    if (Array.isArray(v)) {
      for (const item of v) add(measure(item, level + 1), 1);
    } else {
      for (const [k, item] of Object.entries(v)) add(measure(item, level + 1), k.length + 4);
    }
    inProgress.delete(v);
    const extent = { bytes, depth };
    known.set(v, extent);
    return extent;
  };

  try {
    const total = measure(value, 1);
    if (total.bytes > limits.maxBytes) return tooLarge(limits.maxBytes, shared);
    return undefined;
  } catch (err) {
    if (err instanceof LimitExceeded) return err.message;
    throw err;
  }
}

function tooLarge(maxBytes: number, aliases: boolean): string {
  // Aliases of a string cannot be told from copies of it: both read "as JSON".
  return aliases
    ? `excessive aliasing: the document expands to more than ${maxBytes} bytes`
    : `the document is larger than ${maxBytes} bytes as JSON (aliases expanded)`;
}

function scalarBytes(v: unknown): number {
  if (typeof v === 'string') return v.length + 2;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v).length;
  return 4; // null, undefined
}
