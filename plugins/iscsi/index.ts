import { mkdir, readdir, realpath, rmdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { bindMount, definePlugin, formatAndMount, isMountPoint, podFsGroup, podFullName, readMounts, setVolumeOwnership, unmount, type ObjectSource, type VolumeMountRequest, type VolumeMountResult } from 'kubelet-ts';
import { byPathDevice, CHAP_DISCOVERY_KEYS, CHAP_SESSION_KEYS, globalMountDir, iscsiDisk, type IscsiDisk } from './iscsi-disk.ts';
import { findIscsiadm, IscsiadmError, iscsiadm } from './iscsiadm.ts';
import { checkLiveSession } from './session-auth.ts';
import { optionsSchema, type IscsiOptions } from './options-schema.ts';

/** What the plugin keeps with a set-up volume (VolumeMountResult.data): enough to log out after a restart. */
interface IscsiVolumeData { [key: string]: unknown; portal: string; iqn: string; lun: number; iface: string; globalDir: string }

/**
 * iscsi: upstream's in-tree `iscsi` volume plugin for the TCP transport. A pod's `iscsi`
 * volume, or a PersistentVolume with an `iscsi` source, is logged in to with the node's
 * open-iscsi (discovery, login, `node.startup manual`, as upstream), its LUN formatted if
 * blank and mounted once per node under `<rootDir>/plugins/kubernetes.io/iscsi/iface-<iface>/`
 * (upstream's global dir), then bound into each pod's volume dir. When the last pod using the
 * LUN is gone it is unmounted, and when no LUN of the target is mounted any more the node logs
 * out of the target and deletes its record.
 */
export default definePlugin<IscsiOptions>({
  name: 'iscsi',
  kind: 'storage',
  optionsSchema,
  apply(ctx, options) {
    const timeoutMs = options.commandTimeoutSeconds * 1000;
    /** Work on one target, one at a time: two pods logging in, or one logging out while another logs in, would race. */
    const targets = new Map<string, Promise<unknown>>();
    const serially = <T>(iqn: string, work: () => Promise<T>): Promise<T> => {
      const next = (targets.get(iqn) ?? Promise.resolve()).catch(() => {}).then(work);
      targets.set(iqn, next);
      return next.finally(() => { if (targets.get(iqn) === next) targets.delete(iqn); });
    };

    ctx.hooks.mountVolume.for('iscsi').tapPromise('iscsi', async (r, hook): Promise<VolumeMountResult> => {
      const disk = diskOf(r);
      if (r.previous && (await isMountPoint(r.dir))) return r.previous;
      const bin = await findIscsiadm();
      const globalDir = globalMountDir(r.rootDir, disk);
      const signal = hook.signal;
      const portal = await serially(disk.iqn, async () => {
        const attached = await attach(bin, disk, await chapSecret(r.objects, disk), { timeoutMs, signal, deviceWaitMs: options.deviceWaitSeconds * 1000 });
        if (!(await isMountPoint(globalDir))) {
          await mkdir(globalDir, { recursive: true, mode: 0o750 });
          await formatAndMount(attached.device, globalDir, disk.fsType, disk.readOnly);
        }
        return attached.portal;
      });
      await mkdir(r.dir, { recursive: true, mode: 0o750 });
      await bindMount(globalDir, r.dir, disk.readOnly);
      const own = podFsGroup(r.pod);
      if (own && !disk.readOnly) {
        await setVolumeOwnership(r.dir, {
          fsGroup: own.fsGroup, readOnly: false, changePolicy: own.changePolicy,
          onSkip: (why) => ctx.logger.warn({ pod: podFullName(r.pod), volume: r.volume.name, why }, 'fsGroup: part of the volume left unchanged'),
        });
      }
      ctx.logger.info({ pod: podFullName(r.pod), volume: r.volume.name, portal, iqn: disk.iqn, lun: disk.lun, globalDir }, 'iscsi volume mounted');
      const data: IscsiVolumeData = { portal, iqn: disk.iqn, lun: disk.lun, iface: disk.iface, globalDir };
      return { path: r.dir, mountPoint: true, ...(disk.readOnly ? { readOnly: true } : {}), data };
    });

    ctx.hooks.unmountVolume.for('iscsi').tapPromise('iscsi', async (r) => {
      await unmount(r.dir, r.mountTable);
      await rmdir(r.dir).catch((err: NodeJS.ErrnoException) => { if (err.code !== 'ENOENT') throw err; });
      const data = r.mounted.data as IscsiVolumeData | undefined;
      if (!data?.globalDir) return true;
      const bin = await findIscsiadm();
      await serially(data.iqn, async () => {
        // The LUN's per-node mount goes when no pod's bind of it is left.
        const mounts = await readMounts();
        const global = mounts.find((m) => m.mountPoint === data.globalDir);
        if (global) {
          if (mounts.some((m) => m !== global && m.source === global.source && m.mountPoint !== data.globalDir)) return;
          await unmount(data.globalDir);
          await rmdir(data.globalDir).catch(() => {});
        }
        if (await logoutIfUnused(bin, data.portal, data.iqn, data.iface, timeoutMs)) ctx.logger.info({ portal: data.portal, iqn: data.iqn }, 'iscsi target logged out of');
      });
      return true;
    });
  },
});

/** The disk of the request: the pod's inline source, or the claim's PersistentVolume. */
function diskOf(r: VolumeMountRequest): IscsiDisk {
  const pv = r.persistentVolume;
  const ns = r.pod.metadata?.namespace ?? 'default';
  if (!pv) return iscsiDisk(r.volume.iscsi, false, ns, `volume "${r.volume.name}": iscsi`);
  const field = `PersistentVolume "${pv.volume.metadata?.name}": spec.iscsi`;
  if (pv.volume.spec?.volumeMode === 'Block') throw new Error(`${field}: volumeMode Block is not supported by kubelet-ts's iscsi plugin (Filesystem is)`);
  return iscsiDisk(pv.volume.spec?.iscsi, pv.readOnly, ns, field);
}

/** The CHAP keys from the volume's Secret, when CHAP is on. */
async function chapSecret(objects: ObjectSource, disk: IscsiDisk): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  if (!disk.secret) return keys;
  const s = await objects.secret(disk.secret.namespace, disk.secret.name);
  if (!s) throw new Error(`the CHAP Secret ${disk.secret.namespace}/${disk.secret.name} is not found`);
  for (const [k, v] of Object.entries(s.data ?? {})) keys.set(k, Buffer.from(v, 'base64').toString('utf8'));
  for (const [k, v] of Object.entries(s.stringData ?? {})) keys.set(k, v);
  return keys;
}

/**
 * Logs in to the disk's target through its portals in order until one gives the LUN's device
 * (upstream's AttachDisk for one path). A portal the node is logged in to already is used as it
 * is, if that login took the volume's CHAP settings (checkLiveSession).
 */
async function attach(bin: string, disk: IscsiDisk, secret: Map<string, string>, call: { timeoutMs: number; signal: AbortSignal; deviceWaitMs: number }): Promise<{ portal: string; device: string }> {
  const errors: string[] = [];
  for (const portal of disk.portals) {
    const link = byPathDevice(disk, portal);
    if (await exists(link)) {
      await checkLiveSession(bin, disk, portal, secret, call);
      return { portal, device: await realpath(link) };
    }
    const base = ['-p', portal, '-I', disk.iface];
    const node = ['-m', 'node', ...base, '-T', disk.iqn];
    let loggedIn = false;
    try {
      await iscsiadm(bin, ['-m', 'discoverydb', '-t', 'sendtargets', ...base, '-o', 'new'], call).catch(() => {});
      if (disk.chapDiscovery) await setKeys(bin, ['-m', 'discoverydb', '-t', 'sendtargets', ...base], 'discovery.sendtargets.auth.authmethod', CHAP_DISCOVERY_KEYS, secret, call);
      await iscsiadm(bin, ['-m', 'discoverydb', '-t', 'sendtargets', ...base, '--discover'], call);
      if (disk.chapSession) await setKeys(bin, node, 'node.session.auth.authmethod', CHAP_SESSION_KEYS, secret, call);
      try {
        await iscsiadm(bin, [...node, '--login'], call);
        loggedIn = true;
      } catch (err) {
        // A login killed at its timeout goes on in iscsid: log out of it (which ends it) before
        // the record can go. The clean-up runs whatever the pod does: it is the node's.
        if (err instanceof IscsiadmError && err.timedOut) await iscsiadm(bin, [...node, '--logout'], { timeoutMs: call.timeoutMs }).catch(() => {});
        await iscsiadm(bin, [...node, '-o', 'delete'], { timeoutMs: call.timeoutMs }).catch(() => {});
        throw err;
      }
      // A node that reboots must not hang at boot logging in to a target no pod wants yet.
      await iscsiadm(bin, ['-m', 'node', '-p', portal, '-T', disk.iqn, '-o', 'update', '-n', 'node.startup', '-v', 'manual'], { timeoutMs: call.timeoutMs }).catch(() => {});
      for (let waited = 0; waited < call.deviceWaitMs; waited += 250) {
        if (await exists(link)) return { portal, device: await realpath(link) };
        await sleep(250, undefined, { signal: call.signal });
      }
      errors.push(`${portal}: logged in, but no ${link} within ${call.deviceWaitMs / 1000} s (is LUN ${disk.lun} mapped to this initiator?)`);
      // A login that gave nothing is not left behind (unless another LUN of the target is in use).
      await logoutIfUnused(bin, portal, disk.iqn, disk.iface, call.timeoutMs).catch(() => {});
    } catch (err) {
      if (call.signal.aborted) {
        // The pod gave up after its login: the session is nobody's unless another LUN of the target is mounted.
        if (loggedIn) await logoutIfUnused(bin, portal, disk.iqn, disk.iface, call.timeoutMs).catch(() => {});
        throw err;
      }
      errors.push(`${portal}: ${(err as Error).message}`);
    }
  }
  throw new Error(`failed to get any path for iscsi disk ${disk.iqn} lun ${disk.lun}: ${errors.join('; ')}`);
}

async function setKeys(bin: string, record: string[], methodKey: string, keys: readonly string[], secret: Map<string, string>, call: { timeoutMs: number; signal: AbortSignal }): Promise<void> {
  await iscsiadm(bin, [...record, '-o', 'update', '-n', methodKey, '-v', 'CHAP'], call);
  for (const k of keys) {
    const v = secret.get(k);
    if (v) await iscsiadm(bin, [...record, '-o', 'update', '-n', k, '-v', v], { ...call, secret: v });
  }
}

/**
 * Logs out of the target through `portal` and deletes its node record, when none of the
 * target's LUNs is mounted (another volume may use another LUN of it); true if it did.
 */
async function logoutIfUnused(bin: string, portal: string, iqn: string, iface: string, timeoutMs: number): Promise<boolean> {
  const inUse = new Set((await readMounts()).map((m) => m.source));
  for (const device of await targetDevices(portal, iqn)) if (inUse.has(device)) return false;
  await iscsiadm(bin, ['-m', 'node', '-p', portal, '-T', iqn, '-I', iface, '--logout'], { timeoutMs }).catch((err: Error) => {
    // Already logged out (a restart, an operator): nothing to undo.
    if (!/No matching sessions found|not logged in/i.test(err.message)) throw err;
  });
  await iscsiadm(bin, ['-m', 'node', '-p', portal, '-T', iqn, '-I', iface, '-o', 'delete'], { timeoutMs }).catch(() => {});
  return true;
}

/** The devices of every LUN of the target through `portal`, as udev links them. */
async function targetDevices(portal: string, iqn: string): Promise<string[]> {
  const dir = '/dev/disk/by-path';
  const prefix = `ip-${portal}-iscsi-${iqn}-lun-`;
  const names = await readdir(dir).catch(() => [] as string[]);
  const out: string[] = [];
  for (const n of names) if (n.startsWith(prefix) && !n.includes('-part')) out.push(await realpath(path.join(dir, n)).catch(() => ''));
  return out.filter(Boolean);
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(() => true, () => false);
}
