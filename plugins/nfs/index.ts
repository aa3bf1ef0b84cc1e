import { access, mkdir, rmdir } from 'node:fs/promises';
import { definePlugin, isMountPoint, mountFilesystem, networkFsFigures, unmount, type VolumeMountRequest, type VolumeMountResult } from 'kubelet-ts';
import { nfsMountSpec } from './nfs-source.ts';
import { optionsSchema, type NfsOptions } from './options-schema.ts';

/** Where Debian's nfs-common (and other distributions) put the helper `mount -t nfs` runs. */
const MOUNT_NFS = ['/sbin/mount.nfs', '/usr/sbin/mount.nfs'];
/** How long the server's statfs may take before the volume's figures are left out of a summary. */
const STATFS_TIMEOUT_MS = 30_000;
/** The deprecated annotation upstream still reads a PersistentVolume's mount options from (before spec.mountOptions). */
const MOUNT_OPTIONS_ANNOTATION = 'volume.beta.kubernetes.io/mount-options';

/**
 * nfs: upstream's in-tree `nfs` volume plugin. An `nfs` volume of a pod, or a PersistentVolume
 * with an `nfs` source, is mounted with the node's mount.nfs at the volume's directory
 * (`kubernetes.io~nfs/<name>`), read-only when the pod or the volume says so, with the
 * PersistentVolume's `mountOptions`; it is unmounted when the pod is gone. As upstream, the
 * pod's fsGroup does not change ownership on the server, and nothing is attached: the node
 * needs only mount.nfs (Debian package nfs-common) and the kernel's NFS client.
 */
export default definePlugin<NfsOptions>({
  name: 'nfs',
  kind: 'storage',
  optionsSchema,
  apply(ctx, options) {
    const timeoutMs = options.mountTimeoutSeconds * 1000;

    ctx.hooks.mountVolume.for('nfs').tapPromise('nfs', async (r, hook): Promise<VolumeMountResult> => {
      const spec = mountSpec(r);
      // Set up again at each sync: a volume already mounted stays as it is.
      if (r.previous && (await isMountPoint(r.dir))) return r.previous;
      if (!(await helperInstalled())) throw new Error(`mount.nfs is not installed on this node (${MOUNT_NFS.join(' or ')}; Debian package nfs-common)`);
      await mkdir(r.dir, { recursive: true, mode: 0o750 });
      try {
        await mountFilesystem(spec.source, r.dir, 'nfs', spec.options, { signal: hook.signal, timeoutMs });
      } catch (err) {
        // Nothing half-made is left: a killed mount may still have got through.
        if (await isMountPoint(r.dir).catch(() => false)) await unmount(r.dir).catch(() => {});
        await rmdir(r.dir).catch(() => {});
        throw err;
      }
      ctx.logger.info({ pod: r.pod.metadata?.name, namespace: r.pod.metadata?.namespace, volume: r.volume.name, source: spec.source, options: spec.options }, 'nfs volume mounted');
      return { path: r.dir, mountPoint: true, ...(spec.readOnly ? { readOnly: true } : {}) };
    });

    // A server that is gone leaves a plain umount waiting for it: after unmountTimeoutSeconds it is
    // killed and `umount -f` follows (upstream's nfs plugin: CleanupMountWithForce, a minute).
    const unmountAfterMs = options.unmountTimeoutSeconds * 1000;
    ctx.hooks.unmountVolume.for('nfs').tapPromise('nfs', async (r, hook) => {
      await unmount(r.dir, r.mountTable, {
        forceAfterMs: unmountAfterMs,
        signal: hook.signal,
        onForce: (target) => ctx.logger.warn({ podUID: r.podUID, volume: r.volumeName, dir: target }, `nfs volume: umount had no answer within ${options.unmountTimeoutSeconds} s (server gone?); forcing it (umount -f)`),
      });
      await rmdir(r.dir).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw new Error(`removing ${r.dir} after its unmount: ${err.message}`);
      });
      return true;
    });

    // A PersistentVolume's use in /stats/summary, from the server's statfs (upstream's MetricsStatFS),
    // asked in a child process: a server that is gone must not hold a thread of the kubelet's.
    ctx.hooks.volumeStats.for('nfs').tapPromise('nfs', (r, hook) => networkFsFigures(r.mounted.path, { timeoutMs: STATFS_TIMEOUT_MS, signal: hook.signal }));
  },
});

/** The mount for this request: the pod's inline source, or the claim's PersistentVolume and its mount options. */
function mountSpec(r: VolumeMountRequest) {
  const pv = r.persistentVolume;
  if (!pv) return nfsMountSpec(r.volume.nfs, false, [], `volume "${r.volume.name}": nfs`);
  const annotated = pv.volume.metadata?.annotations?.[MOUNT_OPTIONS_ANNOTATION];
  const mountOptions = [...(annotated ? annotated.split(',').map((o) => o.trim()).filter(Boolean) : []), ...(pv.volume.spec?.mountOptions ?? [])];
  return nfsMountSpec(pv.volume.spec?.nfs, pv.readOnly, mountOptions, `PersistentVolume "${pv.volume.metadata?.name}": spec.nfs`);
}

async function helperInstalled(): Promise<boolean> {
  for (const p of MOUNT_NFS) if (await access(p).then(() => true, () => false)) return true;
  return false;
}
