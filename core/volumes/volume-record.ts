import fs from 'node:fs/promises';
import path from 'node:path';

/** The record's file in the pod's dir: what was set up, for a kubelet started again to tear it down. */
export const RECORD_FILE = 'kubelet-ts-volumes.json';
/** Volumes set up since the record was last written whole, one JSON line each. */
export const JOURNAL_FILE = 'kubelet-ts-volumes.journal';

/** What the record needs of a set-up volume (the volume manager's MountedVolume). */
export interface RecordedVolume { name: string; type: string; dir: string; result: object }

interface PodVolumeRecord<V> { uid: string; volumes: V[] }

/**
 * The volumes of a pod as recorded on disk: a whole record, written after a change of the set
 * (atomically: tmp + rename), and a journal that a set-up appends one line to per volume, so a
 * kubelet killed half-way through a pod's set-up still knows each volume it set up. Appending
 * keeps a set-up of V volumes at O(V) bytes written; rewriting the whole record after each one
 * made it O(V²) (a pod of 3,000 volumes wrote over a gigabyte).
 */
export class VolumeRecordStore<V extends RecordedVolume> {
  constructor(private readonly podDir: (uid: string) => string) {}

  /**
   * The recorded volumes by name (the record, then the journal's lines in order), or undefined
   * when there is neither or the record does not parse. A journal found is folded into the
   * record at once: a line torn by a kill would otherwise swallow the next one appended.
   */
  async read(uid: string): Promise<Map<string, V> | undefined> {
    const dir = this.podDir(uid);
    const [whole, journal] = await Promise.all([
      fs.readFile(path.join(dir, RECORD_FILE), 'utf8').catch(() => undefined),
      fs.readFile(path.join(dir, JOURNAL_FILE), 'utf8').catch(() => undefined),
    ]);
    let recorded: unknown[] | undefined;
    try {
      if (whole !== undefined) recorded = (JSON.parse(whole) as PodVolumeRecord<unknown>).volumes;
    } catch {
      recorded = undefined; // as good as none: the pod dir's mounts are still found and unmounted
    }
    if (!Array.isArray(recorded) && journal === undefined) return undefined;
    const volumes = new Map<string, V>();
    for (const v of recorded ?? []) if (isRecordedVolume<V>(v)) volumes.set(v.name, v);
    for (const line of (journal ?? '').split('\n')) {
      if (!line) continue;
      try {
        const v = JSON.parse(line) as unknown;
        if (isRecordedVolume<V>(v)) volumes.set(v.name, v);
      } catch {
        // The last line of a kubelet killed mid-append: that volume's set-up had not returned.
      }
    }
    if (journal !== undefined) await this.write(uid, volumes.values());
    return volumes;
  }

  /** Records that `mv` is set up (one line appended; the pod's dir exists: the volume is in it). */
  async append(uid: string, mv: V): Promise<void> {
    await fs.appendFile(path.join(this.podDir(uid), JOURNAL_FILE), `${JSON.stringify(mv)}\n`);
  }

  /** Writes the whole set, which supersedes the journal (removed after the record is in place). */
  async write(uid: string, volumes: Iterable<V>): Promise<void> {
    const dir = this.podDir(uid);
    const file = path.join(dir, RECORD_FILE);
    await fs.mkdir(dir, { recursive: true });
    const tmp = `${file}.tmp`;
    await fs.writeFile(tmp, JSON.stringify({ uid, volumes: [...volumes] } satisfies PodVolumeRecord<V>));
    await fs.rename(tmp, file);
    await fs.rm(path.join(dir, JOURNAL_FILE), { force: true });
  }
}

/** A line or entry that has the shape the store wrote (anything else on disk is ignored). */
function isRecordedVolume<V extends RecordedVolume>(v: unknown): v is V {
  const o = v as Partial<RecordedVolume> | null;
  return !!o && typeof o.name === 'string' && typeof o.type === 'string' && typeof o.dir === 'string' && typeof o.result === 'object' && o.result !== null;
}
