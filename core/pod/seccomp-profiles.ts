/**
 * Localhost seccomp profiles must exist before the container is created: upstream leaves the
 * check to the runtime, whose error (a CreateContainerError naming a path the pod did not
 * write) does not say where the kubelet looked; here the container waits with
 * CreateContainerConfigError and a message that does.
 */
import fs from 'node:fs/promises';
import type { LinuxContainerSecurityContext } from '../runtime/types.ts';
import { SecurityContextError } from './security-context.ts';

/** Throws SecurityContextError when the container's Localhost seccomp profile is not a readable file. */
export async function checkSeccompProfile(sc: Pick<LinuxContainerSecurityContext, 'seccomp' | 'privileged'>, container: string, profileRoot: string): Promise<void> {
  // A privileged container runs without seccomp whatever it names (the runtime ignores the profile).
  if (sc.privileged || sc.seccomp?.profileType !== 'Localhost' || !sc.seccomp.localhostRef) return;
  const file = sc.seccomp.localhostRef;
  const st = await fs.stat(file).catch((err: NodeJS.ErrnoException) => err);
  if (st instanceof Error) {
    const why = st.code === 'ENOENT' ? 'does not exist' : st.message;
    throw new SecurityContextError(`container ${container}: seccomp profile ${file} ${why} (Localhost profiles are read from ${profileRoot} on the node)`);
  }
  if (!st.isFile()) throw new SecurityContextError(`container ${container}: seccomp profile ${file} is not a file (Localhost profiles are read from ${profileRoot} on the node)`);
}
