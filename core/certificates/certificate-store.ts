/**
 * Upstream's certificate file store: each pair the kubelet obtains is one PEM file (the
 * certificate chain, then the key) named `<prefix>-<local time>.pem` in certDirectory, and
 * `<prefix>-current.pem` is a symbolic link to the one in use, so a kubeconfig or an operator
 * can name the current pair by one path that never changes. A new pair is written whole (a
 * temporary file renamed) before the link moves, and the link is replaced by renaming a new
 * link over it: whoever opens the current path gets the old pair or the new, never a part.
 * (Upstream removes the old link before renaming, leaving an instant with none; a leftover
 * `<prefix>-updated.pem` link from an interrupted update is taken as current, as upstream's
 * recover() does.)
 *
 * The key of a request still waiting for its certificate is kept in `<prefix>.key.tmp` (upstream
 * `kubelet-client.key.tmp`): a restart asks again with the same key, under the same name, and
 * finds the request it made instead of making another.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { errorMessage } from '../errors.ts';
import { generateKey, keyToPem } from './csr.ts';
import { parsePair, type CertificatePair } from './pem-pair.ts';

export type StorePrefix = 'kubelet-client' | 'kubelet-server';

export class CertificateStore {
  constructor(
    readonly dir: string,
    readonly prefix: StorePrefix,
    /** A pair to use while the store has none (upstream: the kubeconfig's or tlsCertFile's files). */
    private readonly fallback?: { certFile: string; keyFile: string },
  ) {}

  /** `<dir>/<prefix>-current.pem`: the link to the pair in use. */
  get currentPath(): string {
    return path.join(this.dir, `${this.prefix}-current.pem`);
  }

  private get updatedPath(): string {
    return path.join(this.dir, `${this.prefix}-updated.pem`);
  }

  /** Where the key of a request still waiting is kept. */
  get pendingKeyPath(): string {
    return path.join(this.dir, `${this.prefix}.key.tmp`);
  }

  /**
   * The pair in use: the current link's, else the fallback files', else undefined. A current
   * link whose file cannot be read or does not hold a matching pair is an Error naming the file.
   */
  async current(): Promise<CertificatePair | undefined> {
    await this.recover();
    const text = await fs.readFile(this.currentPath, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw new Error(`${this.currentPath}: cannot read it: ${errorMessage(err)}`);
    });
    if (text !== undefined) return parseOrThrow(text, text, this.currentPath);
    if (!this.fallback) return undefined;
    const { certFile, keyFile } = this.fallback;
    let cert: string;
    let key: string;
    try {
      [cert, key] = await Promise.all([fs.readFile(certFile, 'utf8'), fs.readFile(keyFile, 'utf8')]);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`${certFile}: cannot read it: ${errorMessage(err)}`);
    }
    return parseOrThrow(cert, key, certFile === keyFile ? certFile : `${certFile} and ${keyFile}`);
  }

  /**
   * Stores a new pair and makes it current: `<prefix>-<time>.pem` (mode 0600) written whole, then
   * the link moved to it. Returns the pair as read back from the new file.
   */
  async update(certPem: string, keyPem: string, now = new Date()): Promise<CertificatePair> {
    const pair = parsePair(certPem, keyPem, 'the new certificate');
    await fs.mkdir(this.dir, { recursive: true, mode: 0o755 });
    const file = path.join(this.dir, `${this.prefix}-${fileTime(now)}.pem`);
    const tmp = `${file}.tmp-${process.pid}`;
    await fs.writeFile(tmp, pair.certPem + pair.keyPem, { mode: 0o600 });
    await fs.chmod(tmp, 0o600);
    await fs.rename(tmp, file);
    // The link names the file by its absolute path (upstream's), so it works from any directory.
    await fs.rm(this.updatedPath, { force: true });
    await fs.symlink(path.resolve(file), this.updatedPath);
    await fs.rename(this.updatedPath, this.currentPath);
    return { ...pair, source: this.currentPath };
  }

  /** A link left by an update interrupted between its two renames becomes current. */
  private async recover(): Promise<void> {
    const current = await fs.lstat(this.currentPath).catch(() => undefined);
    if (current) return;
    const updated = await fs.lstat(this.updatedPath).catch(() => undefined);
    if (updated?.isSymbolicLink()) await fs.rename(this.updatedPath, this.currentPath).catch(() => {});
  }

  /** The key of the request that waits, or a new one (written first, mode 0600, so a restart asks with it again). */
  async pendingKey(): Promise<KeyObject> {
    const text = await fs.readFile(this.pendingKeyPath, 'utf8').catch(() => undefined);
    if (text !== undefined) {
      try {
        return createPrivateKey(text);
      } catch {
        // Unusable (a torn write): replaced below.
      }
    }
    const key = await generateKey();
    await fs.mkdir(this.dir, { recursive: true, mode: 0o755 });
    const tmp = `${this.pendingKeyPath}.${process.pid}`;
    await fs.writeFile(tmp, keyToPem(key), { mode: 0o600 });
    await fs.rename(tmp, this.pendingKeyPath);
    return key;
  }

  /** Forgets the waiting request's key (it got its certificate, or it was refused). */
  async dropPendingKey(): Promise<void> {
    await fs.rm(this.pendingKeyPath, { force: true });
  }
}

function parseOrThrow(certText: string, keyText: string, source: string): CertificatePair {
  try {
    return parsePair(certText, keyText, source);
  } catch (err) {
    throw new Error(`${source}: ${errorMessage(err)}`);
  }
}

/** Upstream's file time: local time as 2006-01-02-15-04-05. */
export function fileTime(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}-${p(d.getMinutes())}-${p(d.getSeconds())}`;
}
