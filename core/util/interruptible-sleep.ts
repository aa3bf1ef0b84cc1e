/**
 * A back-off sleep that can be cut short: `wake()` ends the current sleep at once (the server
 * answers again, or the component stops). Retry loops of the API side share it.
 */
export class InterruptibleSleep {
  private waker: (() => void) | undefined;

  /** Sleeps `ms` (unref'd: it never keeps the process alive), or until wake(). */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waker = undefined;
        resolve();
      }, ms);
      t.unref();
      this.waker = () => {
        clearTimeout(t);
        this.waker = undefined;
        resolve();
      };
    });
  }

  /** Ends the current sleep, if any. */
  wake(): void {
    this.waker?.();
  }
}
