import fs from 'node:fs/promises';

/** The hostPath `type` values (v1 HostPathType); "" checks nothing. */
export const HOST_PATH_TYPES = ['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'] as const;

/**
 * The hostPath type check, as upstream's checkType: `*OrCreate` creates what is missing
 * (a directory 0755 with its parents; an empty file 0644, whose parent must exist), every
 * other type must already be there and be of that kind. Errors read
 * `hostPath type check failed: <path> is not a directory`.
 */
export async function checkHostPath(p: string, type: string): Promise<void> {
  if (!(HOST_PATH_TYPES as readonly string[]).includes(type)) throw new Error(`hostPath type "${type}" is not supported (allowed: ${HOST_PATH_TYPES.filter(Boolean).join(', ')}, or "")`);
  if (!p.startsWith('/')) throw new Error(`hostPath path "${p}" must be absolute`);
  if (type === '') return;
  const fail = (what: string) => new Error(`hostPath type check failed: ${p} is not ${what}`);
  const st = await fs.stat(p).catch(() => undefined);
  switch (type) {
    case 'DirectoryOrCreate':
      if (!st) {
        await fs.mkdir(p, { recursive: true, mode: 0o755 });
        return;
      }
      if (!st.isDirectory()) throw fail('a directory');
      return;
    case 'Directory':
      if (!st?.isDirectory()) throw fail('a directory');
      return;
    case 'FileOrCreate':
      if (!st) {
        const fh = await fs.open(p, 'a', 0o644).catch((err: Error) => {
          throw new Error(`hostPath type check failed: cannot create file ${p}: ${err.message}`);
        });
        await fh.close();
        return;
      }
      if (!st.isFile()) throw fail('a file');
      return;
    case 'File':
      if (!st?.isFile()) throw fail('a file');
      return;
    case 'Socket':
      if (!st?.isSocket()) throw fail('a socket file');
      return;
    case 'CharDevice':
      if (!st?.isCharacterDevice()) throw fail('a character device');
      return;
    case 'BlockDevice':
      if (!st?.isBlockDevice()) throw fail('a block device');
      return;
  }
}
