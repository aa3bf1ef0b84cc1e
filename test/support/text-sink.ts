import { Writable } from 'node:stream';

/** A writable stream that keeps what is written, for tests of commands that print (stdout, stderr, a log follower). */
export class TextSink extends Writable {
  private readonly chunks: Buffer[] = [];
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    cb();
  }
  /** Everything written so far, decoded as UTF-8 once (a character split across writes stays whole). */
  get text(): string {
    return Buffer.concat(this.chunks).toString();
  }
}
