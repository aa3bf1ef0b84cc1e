/**
 * The body of a watch: one JSON object per line (`{"type":"ADDED","object":{...}}`), split as the
 * chunks arrive, whatever the transport. A line that is not JSON ends the watch with an error
 * (the stream is no longer in step with the server's events).
 */
export class WatchLines {
  private buffered = '';

  constructor(
    private readonly onEvent: (type: string, object: unknown) => void,
    /** Whether the watch was stopped: no event is delivered after that. */
    private readonly stopped: () => boolean,
  ) {}

  /** Takes a chunk; returns an Error when a line did not parse (the caller ends the stream). */
  push(chunk: string): Error | undefined {
    if (this.stopped()) return undefined;
    this.buffered += chunk;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
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
    return undefined;
  }
}

/** The longest error body kept from a watch answered with an error status. */
export const WATCH_ERROR_BODY_MAX = 64 * 1024;
