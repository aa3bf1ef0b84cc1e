import fs from 'node:fs/promises';
import path from 'node:path';
import type { CniResult, NetworkConfigList } from './types.ts';

/**
 * One attachment as the runtime remembers it on disk, so DEL and CHECK work after a kubelet
 * restart and with the network config changed or gone since the ADD: the config the ADD
 * ran with, its CNI_ARGS and capability values, and the result. Written before the first
 * plugin runs (state `adding`), so even an ADD cut short by a crash is torn down later.
 */
export interface CacheEntry {
  kind: 'cni-exec/v1';
  containerId: string;
  ifName: string;
  netns: string;
  network: NetworkConfigList;
  args: Array<[string, string]>;
  capabilityArgs: Record<string, unknown>;
  /** `adding` until the chain's ADD succeeded; `added` with the result after. */
  state: 'adding' | 'added';
  result?: CniResult;
  /** The pod the attachment is for, when known. */
  pod?: { namespace: string; name: string; uid: string };
  createdAt: string;
}

const SAFE = /^[A-Za-z0-9_.-]+$/;

/** The result cache: one JSON file per attachment, `<containerId>-<ifName>.json`, written atomically. */
export class ResultCache {
  constructor(readonly dir: string) {}

  private file(containerId: string, ifName: string): string {
    if (!SAFE.test(containerId) || !SAFE.test(ifName)) throw new Error(`invalid container id or interface name for the cache: ${JSON.stringify([containerId, ifName])}`);
    return path.join(this.dir, `${containerId}-${ifName}.json`);
  }

  async get(containerId: string, ifName: string): Promise<CacheEntry | undefined> {
    try {
      const entry = JSON.parse(await fs.readFile(this.file(containerId, ifName), 'utf8')) as CacheEntry;
      return entry.kind === 'cni-exec/v1' ? entry : undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      // A torn or foreign file: treat as absent, but do not delete what we cannot read.
      if (err instanceof SyntaxError) return undefined;
      throw err;
    }
  }

  async put(entry: CacheEntry): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.file(entry.containerId, entry.ifName);
    const tmp = `${file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, JSON.stringify(entry, null, 1), { mode: 0o600 });
    await fs.rename(tmp, file);
  }

  async delete(containerId: string, ifName: string): Promise<void> {
    await fs.rm(this.file(containerId, ifName), { force: true });
  }

  /** Every entry on disk (unreadable files are skipped). */
  async list(): Promise<CacheEntry[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch {
      return [];
    }
    const out: CacheEntry[] = [];
    for (const n of names.filter((n) => n.endsWith('.json'))) {
      try {
        const e = JSON.parse(await fs.readFile(path.join(this.dir, n), 'utf8')) as CacheEntry;
        if (e.kind === 'cni-exec/v1') out.push(e);
      } catch {
        // skip
      }
    }
    return out;
  }

  /** Entries of one container (any interface). */
  async forContainer(containerId: string): Promise<CacheEntry[]> {
    return (await this.list()).filter((e) => e.containerId === containerId);
  }
}
