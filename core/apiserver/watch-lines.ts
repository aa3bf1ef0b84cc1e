/**
 * The body of a watch: one JSON object per line (`{"type":"ADDED","object":{...}}`), split as the
 * chunks arrive, whatever the transport. A line that is not JSON ends the watch with an error
 * (the stream is no longer in step with the server's events).
 */
export class WatchLines {
  /**
   * The chunks of the line not yet complete. A pod of thousands of env vars or volumes is a
   * line of megabytes in hundreds of chunks: each chunk is searched for a newline once, and the
   * line joined once, instead of searching and copying the whole growing line at every chunk.
   */
  private pending: string[] = [];

  constructor(
    private readonly onEvent: (type: string, object: unknown) => void,
    /** Whether the watch was stopped: no event is delivered after that. */
    private readonly stopped: () => boolean,
  ) {}

  /** Takes a chunk; returns an Error when a line did not parse (the caller ends the stream). */
  push(chunk: string): Error | undefined {
    if (this.stopped()) return undefined;
    let start = 0;
    let nl: number;
    while ((nl = chunk.indexOf('\n', start)) >= 0) {
      this.pending.push(chunk.slice(start, nl));
      start = nl + 1;
      const line = this.pending.length === 1 ? this.pending[0]! : this.pending.join('');
      this.pending = [];
      if (!line.trim()) continue;
      let parsed: { type?: unknown; object?: unknown };
      try {
        parsed = JSON.parse(line) as typeof parsed;
      } catch (err) {
        return new Error(`the watch stream carried a line that is not JSON: ${(err as Error).message}`);
      }
      this.onEvent(String(parsed.type), parsed.object);
      if (this.stopped()) return undefined;
    }
    if (start < chunk.length) this.pending.push(chunk.slice(start));
    return undefined;
  }
}

/** The longest error body kept from a watch answered with an error status. */
export const WATCH_ERROR_BODY_MAX = 64 * 1024;

/**
 * A watch response's body, whatever the transport: event lines when the status is a success,
 * else the error body (its first 64 KiB) that becomes the watch's end. The status is set when
 * the response head arrives, before the first chunk.
 */
export class WatchBody {
  status = 0;
  private errorBody = '';
  private readonly lines: WatchLines;

  constructor(onEvent: (type: string, object: unknown) => void, stopped: () => boolean) {
    this.lines = new WatchLines(onEvent, stopped);
  }

  /** Takes a chunk; returns an Error when an event line did not parse (the caller ends the stream). */
  push(chunk: string): Error | undefined {
    if (this.status >= 400) {
      if (this.errorBody.length < WATCH_ERROR_BODY_MAX) this.errorBody += chunk;
      return undefined;
    }
    return this.lines.push(chunk);
  }

  /** How the watch ended once the body is complete: the server's error, or `failure` (undefined: a clean end). */
  end(failure?: Error): Error | undefined {
    if (this.status >= 400) return Object.assign(new Error(this.errorBody), { statusCode: this.status });
    return failure;
  }
}
