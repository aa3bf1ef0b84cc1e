import fs from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { IDMapping, UserNamespaceOptions } from '../runtime/types.ts';

/**
 * User namespaces for pods with `hostUsers: false`, as upstream's userns manager gives them:
 * each such pod gets a block of 65536 host IDs of its own, mapped to IDs 0-65535 in the pod
 * (uid and gid alike), so root in the pod is an unprivileged ID on the host that no other pod
 * shares. The 2^32 ID space is cut into 65536 blocks; the first is the host's, the second held
 * back as upstream does. A pod's block is written to `<rootDir>/pods/<uid>/userns` (upstream's
 * file and format) before its sandbox exists, so a restarted kubelet gives the same pod the
 * same block and never hands a running pod's IDs to another.
 */
export const IDS_PER_POD = 65_536;
const BLOCKS = 2 ** 32 / IDS_PER_POD;
/** Blocks 0 (the host's own IDs) and 1 (upstream keeps it back) are never given out. */
const FIRST_BLOCK = 2;
const FILE = 'userns';

interface UsernsFile {
  uidMappings: IDMapping[];
  gidMappings: IDMapping[];
}

export class UserNamespaces {
  private readonly byPod = new Map<string, number>();
  private readonly used = new Set<number>();

  constructor(private readonly opts: { rootDir: string; logger: Logger }) {}

  /** Reads the blocks of the pods this node already has (after a restart). */
  async start(): Promise<void> {
    const podsDir = path.join(this.opts.rootDir, 'pods');
    for (const uid of await fs.readdir(podsDir).catch(() => [] as string[])) {
      const file = path.join(podsDir, uid, FILE);
      let text: string;
      try {
        text = await fs.readFile(file, 'utf8');
      } catch {
        continue;
      }
      const block = blockOf(text);
      if (block === undefined || this.used.has(block)) {
        // Not a block this kubelet gives: the pod cannot keep it (its sandbox is made again with a new one).
        this.opts.logger.warn({ file }, 'ignoring a user namespace file that is not a valid, unshared block of 65536 IDs');
        continue;
      }
      this.byPod.set(uid, block);
      this.used.add(block);
    }
  }

  /** The pod's user namespace for the runtime: its block (given now, or before a restart), written to disk first. */
  async forPod(pod: V1Pod): Promise<UserNamespaceOptions> {
    const uid = pod.metadata!.uid!;
    let block = this.byPod.get(uid);
    if (block === undefined) {
      block = this.freeBlock();
      this.byPod.set(uid, block);
      this.used.add(block);
      try {
        const dir = path.join(this.opts.rootDir, 'pods', uid);
        await fs.mkdir(dir, { recursive: true });
        const file = path.join(dir, FILE);
        await fs.writeFile(`${file}.tmp`, JSON.stringify(mappingFile(block)));
        await fs.rename(`${file}.tmp`, file);
      } catch (err) {
        this.release(uid);
        throw new Error(`cannot record the pod's user namespace: ${errorMessage(err)}`);
      }
    }
    const { uidMappings, gidMappings } = mappingFile(block);
    return { mode: 'POD', uids: uidMappings, gids: gidMappings };
  }

  /** Gives the pod's block back (its sandbox and containers are gone; the file goes with the pod's directory). */
  release(uid: string): void {
    const block = this.byPod.get(uid);
    if (block === undefined) return;
    this.byPod.delete(uid);
    this.used.delete(block);
  }

  private freeBlock(): number {
    for (let b = FIRST_BLOCK; b < BLOCKS; b++) if (!this.used.has(b)) return b;
    throw new Error('no free block of 65536 user IDs is left on this node');
  }
}

function mappingFile(block: number): UsernsFile {
  const mapping: IDMapping = { hostId: block * IDS_PER_POD, containerId: 0, length: IDS_PER_POD };
  return { uidMappings: [mapping], gidMappings: [{ ...mapping }] };
}

/** The block a userns file describes, if it is one this kubelet would have written. */
function blockOf(text: string): number | undefined {
  try {
    const f = JSON.parse(text) as Partial<UsernsFile>;
    const [u] = f.uidMappings ?? [];
    const [g] = f.gidMappings ?? [];
    if (!u || !g || f.uidMappings!.length !== 1 || f.gidMappings!.length !== 1) return undefined;
    if (u.hostId !== g.hostId || u.containerId !== 0 || g.containerId !== 0 || u.length !== IDS_PER_POD || g.length !== IDS_PER_POD) return undefined;
    const block = u.hostId / IDS_PER_POD;
    return Number.isInteger(block) && block >= FIRST_BLOCK && block < BLOCKS ? block : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a pod asks for a user namespace of its own. */
export function wantsUserNamespace(pod: V1Pod): boolean {
  return (pod.spec as { hostUsers?: boolean } | undefined)?.hostUsers === false;
}
