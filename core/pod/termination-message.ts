/**
 * Termination messages, as upstream's kubelet makes and reads them
 * (pkg/kubelet/kuberuntime/kuberuntime_container.go: makeMounts, getTerminationMessage,
 * readLastStringFromContainerLogs):
 *
 * - each container instance gets a new empty file `<rootDir>/pods/<uid>/containers/<name>/<random>`
 *   (mode 0666, so any user of the container can write it), bind-mounted read-write at its
 *   `terminationMessagePath`;
 * - once the container has exited, the last 4096 bytes of that file are its message; with
 *   `terminationMessagePolicy: FallbackToLogsOnError`, an empty file and a non-zero exit code
 *   give the last 80 lines of its log instead, at most 2048 bytes of them.
 *
 * The file was written by the container: it is read without following a symlink, only when it
 * is a regular file, and never more than the bound, so nothing planted there can make the
 * kubelet read a host file, block on a FIFO or a device, or read without end.
 */
import type { V1Container } from '@kubernetes/client-node';
import crypto from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { readContainerLog } from '../logs/log-follower.ts';
import { ANNOTATION, LABEL } from '../runtime/labels.ts';
import type { ContainerStatus, Mount } from '../runtime/types.ts';
import { isWithin } from '../volumes/mount-utils.ts';

/** Upstream MaxContainerTerminationMessageLength. */
export const MAX_MESSAGE_BYTES = 4096;
/** Upstream MaxContainerTerminationMessageLogLines and MaxContainerTerminationMessageLogLength. */
export const MAX_LOG_LINES = 80;
export const MAX_LOG_BYTES = 2048;

/** The default terminationMessagePath (API defaulting). */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';

/** `<rootDir>/pods/<uid>/containers`: where the kubelet keeps per-container files of a pod. */
export function podContainersDir(rootDir: string, podUID: string): string {
  return path.join(rootDir, 'pods', podUID, 'containers');
}

/** Thrown when the spec's terminationMessagePath cannot be mounted (CreateContainerConfigError). */
export class TerminationMessagePathError extends Error {}

/**
 * Creates the termination message file of a new container instance and returns its mount, or
 * undefined when the container has no terminationMessagePath (set to ''). The file name is
 * random (8 hex digits as upstream's makeUID) so instances of one container never share a file.
 */
export async function terminationMessageMount(rootDir: string, podUID: string, container: V1Container): Promise<Mount | undefined> {
  const target = container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH;
  if (target === '') return undefined;
  if (!path.isAbsolute(target)) throw new TerminationMessagePathError(`terminationMessagePath "${target}" must be an absolute path`);
  // A container name is a DNS label; anything else must not become a path element here.
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(container.name) || !/^[A-Za-z0-9-]+$/.test(podUID)) {
    throw new TerminationMessagePathError(`cannot make a termination message file for container "${container.name}"`);
  }
  const dir = path.join(podContainersDir(rootDir, podUID), container.name);
  await fs.mkdir(dir, { recursive: true, mode: 0o750 });
  for (let attempt = 0; ; attempt++) {
    const file = path.join(dir, crypto.randomBytes(4).toString('hex'));
    let fh;
    try {
      fh = await fs.open(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o666);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && attempt < 5) continue;
      throw err;
    }
    try {
      // The umask narrowed the mode at creation: a non-root user in the container must be able to write.
      await fh.chmod(0o666);
    } finally {
      await fh.close();
    }
    return { containerPath: target, hostPath: file, readonly: false, propagation: 'PROPAGATION_PRIVATE' };
  }
}

/** The host file behind an instance's termination message, when it is one the kubelet made for it. */
function terminationFile(rootDir: string, status: ContainerStatus, podUID: string): string | undefined {
  const target = status.annotations[ANNOTATION.containerTerminationMessagePath];
  if (!target) return undefined;
  const mount = (status.mounts ?? []).find((m) => m.containerPath === target);
  if (!mount?.hostPath) return undefined;
  // Only a file of the kubelet's own making is read or removed: never a path elsewhere on the host.
  const allowed = path.join(podContainersDir(rootDir, podUID), status.metadata.name);
  const file = path.resolve(mount.hostPath);
  return isWithin(allowed, file) && file !== allowed ? file : undefined;
}

/**
 * Reads at most the last `max` bytes of a file a container wrote: O_NOFOLLOW (a symlink is an
 * error, ELOOP, not followed), O_NONBLOCK (a FIFO does not block), and only a regular file is read.
 */
export async function readBoundedTail(file: string, max: number): Promise<Buffer> {
  const fh = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new Error('not a regular file');
    const n = Math.min(max, st.size);
    const buf = Buffer.alloc(n);
    const { bytesRead } = await fh.read(buf, 0, n, st.size - n);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** The last MAX_LOG_LINES lines of a container's CRI log, at most MAX_LOG_BYTES of them (the last bytes). */
export async function lastLogLines(logPath: string): Promise<string> {
  let kept = Buffer.alloc(0);
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      kept = Buffer.concat([kept, chunk]);
      if (kept.length > MAX_LOG_BYTES) kept = Buffer.from(kept.subarray(kept.length - MAX_LOG_BYTES));
      done();
    },
  });
  try {
    await readContainerLog(logPath, { tailLines: MAX_LOG_LINES }, sink);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    return `Error on reading termination message from logs: ${(err as Error).message}`;
  }
  return kept.toString('utf8');
}

/**
 * The termination message of an exited container instance (upstream getTerminationMessage
 * plus the log fallback), or '' when there is none. Never throws: a file that cannot be read
 * gives upstream's "Error on reading termination log" text instead.
 */
export async function readTerminationMessage(rootDir: string, podUID: string, status: ContainerStatus): Promise<string> {
  if (status.state !== 'CONTAINER_EXITED') return '';
  const policy = status.annotations[ANNOTATION.containerTerminationMessagePolicy];
  // A container that could not even start has no logs to fall back to.
  const fallback = policy === 'FallbackToLogsOnError' && status.exitCode !== 0 && status.reason !== 'ContainerCannotRun';
  let message = '';
  let checkLogs = fallback;
  const file = terminationFile(rootDir, status, podUID);
  if (file) {
    try {
      message = (await readBoundedTail(file, MAX_MESSAGE_BYTES)).toString('utf8');
      checkLogs = fallback && message.length === 0;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') {
        const why = code === 'ELOOP' ? 'it is a symbolic link, which is not followed' : (err as Error).message;
        message = `Error on reading termination log ${file}: ${why}`;
        checkLogs = false;
      }
    }
  }
  if (checkLogs && status.logPath) message = await lastLogLines(status.logPath);
  return message;
}

/** Adds the termination message to an exited instance's status message, as upstream joins them (`<runtime message>: <message>`). */
export async function withTerminationMessage(rootDir: string, status: ContainerStatus): Promise<ContainerStatus> {
  if (status.state !== 'CONTAINER_EXITED') return status;
  const uid = status.labels[LABEL.podUID];
  if (!uid) return status;
  const message = await readTerminationMessage(rootDir, uid, status);
  if (!message) return status;
  return { ...status, message: status.message ? `${status.message}: ${message}` : message };
}

/** Removes the termination message file of a removed container instance (the pod's dir goes with the pod anyway). */
export async function removeTerminationMessageFile(rootDir: string, status: ContainerStatus): Promise<void> {
  const uid = status.labels[LABEL.podUID];
  if (!uid) return;
  const file = terminationFile(rootDir, status, uid);
  if (file) await fs.rm(file, { force: true }).catch(() => {});
}
