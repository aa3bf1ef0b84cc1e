import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, readdir, rename, rm, symlink, writeFile, copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { run, which, type LineLog, noLog } from '../node-env/util.ts';

/**
 * The node VM's disk image, built from Debian's archive and cached by the versions of what is in
 * it: a trixie root (systemd, the Debian kernel, openssh-server, iptables, iproute2,
 * the NFS and iSCSI servers and clients) with containerd 2.1, runc 1.3 and the CNI plugins from
 * sid, as an ext4 file plus the kernel and initrd for qemu's direct boot. Nothing of a test run goes in it (no key, no config of a run):
 * the boot gives root's ssh key on the kernel command line and each run writes its own config.
 *
 * The cache key is a hash of the recipe version, the mirror and the candidate version of each
 * package that matters, resolved with a private apt state (never the host's), so a new Debian
 * point release or sid upload builds a new image and an unchanged archive reuses the old one.
 */

/** Bump when what the recipe puts in the image changes (a new key follows). */
export const RECIPE_VERSION = 5;
export const MIRROR = 'http://deb.debian.org/debian';
export const CACHE_DIR = process.env.KUBELET_TS_NODE_VM_CACHE ?? '/var/cache/kubelet-ts/node-vm';

/** From trixie (the node's release). */
const TRIXIE_PACKAGES = ['libc6', 'libstdc++6', 'systemd', 'linux-image-amd64', 'openssh-server', 'iptables', 'iproute2', 'nfs-kernel-server', 'open-iscsi', 'targetcli-fb'] as const;
/** From sid, one by one: trixie has containerd 1.7 and runc 1.1, the node of 2026 runs 2.1 and 1.3. */
const SID_PACKAGES = ['containerd', 'runc', 'containernetworking-plugins'] as const;
/**
 * What debootstrap adds to minbase: an init, device manager, D-Bus (the systemd driver's), a
 * kernel and its initrd tool; the kernel NFS server and mount.nfs (nfs-common, its dependency)
 * for the nfs plugin's volumes, and the kernel's iSCSI target (LIO, set up with targetcli) and
 * the open-iscsi initiator for the iscsi plugin's, each served by the guest to itself; libstdc++
 * for the Node.js the project disk brings (project-disk.ts: not Debian's nodejs, which is Node 20).
 */
const DEBOOTSTRAP_INCLUDE = ['systemd-sysv', 'udev', 'dbus', 'kmod', 'linux-image-amd64', 'initramfs-tools', 'iproute2', 'iptables', 'openssh-server', 'libstdc++6', 'ca-certificates', 'procps', 'e2fsprogs', 'nfs-kernel-server', 'open-iscsi', 'targetcli-fb'];
const ROOT_IMG_SIZE = '8G';

export interface NodeVmImage {
  dir: string;
  key: string;
  rootImg: string;
  kernel: string;
  initrd: string;
  /** The guest's ssh host key (`type base64 comment`), for known_hosts. */
  hostKey: string;
  versions: Record<string, string>;
  /** True if this call built it, false if it came from the cache. */
  built: boolean;
  buildSeconds: number;
}

/** What the host lacks to build and boot the VM (scripts/install-node-packages.sh --vm), or undefined. */
export function nodeVmHostUnavailableReason(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `the node VM needs linux/x64 (this is ${process.platform}/${process.arch})`;
  if (process.getuid?.() !== 0) return 'the node VM build needs root (debootstrap, chroot)';
  const missing = [
    ['qemu-system-x86_64', 'qemu-system-x86 (from bookworm-backports)'],
    ['qemu-img', 'qemu-utils'],
    ['debootstrap', 'debootstrap'],
    ['mkfs.ext4', 'e2fsprogs'],
    ['ssh', 'openssh-client'],
    ['ssh-keygen', 'openssh-client'],
    ['apt-get', 'apt'],
  ].filter(([bin]) => !which(bin!));
  if (missing.length) return `missing on the host: ${missing.map(([b, p]) => `${b} (Debian package ${p})`).join(', ')}; run scripts/install-node-packages.sh --vm`;
  return undefined;
}

/** The private apt state under the cache, for resolving candidate versions without touching the host's apt. */
async function privateApt(log: LineLog): Promise<string> {
  const dir = join(CACHE_DIR, 'apt');
  for (const d of ['etc/sources.list.d', 'etc/preferences.d', 'state/lists/partial', 'cache/archives/partial', 'log']) await mkdir(join(dir, d), { recursive: true });
  const conf = join(dir, 'apt.conf');
  await writeFile(
    conf,
    [
      `Dir::State "${dir}/state";`,
      `Dir::State::status "${dir}/status";`,
      `Dir::Cache "${dir}/cache";`,
      `Dir::Etc::SourceList "${dir}/etc/sources.list";`,
      `Dir::Etc::SourceParts "${dir}/etc/sources.list.d";`,
      `Dir::Etc::Preferences "${dir}/etc/preferences";`,
      `Dir::Etc::PreferencesParts "${dir}/etc/preferences.d";`,
      `Dir::Log "${dir}/log";`,
      'APT::Architecture "amd64";',
      'APT::Architectures { "amd64"; };',
      'Acquire::Languages "none";',
      'APT::Sandbox::User "root";',
      'Acquire::Retries "2";',
      'Acquire::http::Timeout "30";',
      '',
    ].join('\n'),
  );
  if (!existsSync(join(dir, 'status'))) await writeFile(join(dir, 'status'), '');
  // sid's Release file as served here can be past its Valid-Until: accept it (the archive's
  // signature is still checked).
  await writeFile(
    join(dir, 'etc/sources.list'),
    `deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${MIRROR} trixie main\n` +
      `deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg check-valid-until=no] ${MIRROR} sid main\n`,
  );
  log('apt-get update (private apt state)');
  await run('apt-get', ['-c', conf, 'update', '-q'], { timeoutMs: 300_000 });
  return conf;
}

/** apt-cache policy's candidate for each package, with `release` as the default release. */
async function candidates(conf: string, release: string, pkgs: readonly string[]): Promise<Record<string, string>> {
  const out = await run('apt-cache', ['-c', conf, '-o', `APT::Default-Release=${release}`, 'policy', ...pkgs], { timeoutMs: 60_000 });
  const versions: Record<string, string> = {};
  let current = '';
  for (const line of out.stdout.split('\n')) {
    const pkg = /^(\S+):$/.exec(line);
    if (pkg) current = pkg[1]!;
    const cand = /^\s+Candidate:\s+(\S+)/.exec(line);
    if (cand && current) versions[current] = cand[1]!;
  }
  for (const p of pkgs) if (!versions[p] || versions[p] === '(none)') throw new Error(`node VM image: no ${release} candidate for ${p} at ${MIRROR}`);
  return versions;
}

/** The recipe's key: what would be built now. */
export async function resolveImageKey(log: LineLog = noLog): Promise<{ key: string; versions: Record<string, string> }> {
  const conf = await privateApt(log);
  const versions = { ...(await candidates(conf, 'trixie', TRIXIE_PACKAGES)), ...(await candidates(conf, 'sid', SID_PACKAGES)) };
  const key = createHash('sha256').update(JSON.stringify({ recipeVersion: RECIPE_VERSION, mirror: MIRROR, versions })).digest('hex').slice(0, 16);
  return { key, versions };
}

interface ImageJson {
  key: string;
  recipeVersion: number;
  mirror: string;
  versions: Record<string, string>;
  builtAt: string;
  buildSeconds: number;
  steps: Record<string, number>;
  hostKey: string;
}

function imageFromDir(dir: string, meta: ImageJson, built: boolean): NodeVmImage {
  return { dir, key: meta.key, rootImg: join(dir, 'root.img'), kernel: join(dir, 'vmlinuz'), initrd: join(dir, 'initrd.img'), hostKey: meta.hostKey, versions: meta.versions, built, buildSeconds: meta.buildSeconds };
}

/**
 * The image for the current archive: from the cache when its key's directory is complete
 * (image.json is written last), else built (about 3 minutes) into `<key>.partial` and renamed.
 */
export async function ensureNodeVmImage(log: LineLog = noLog): Promise<NodeVmImage> {
  const { key, versions } = await resolveImageKey(log);
  const dir = join(CACHE_DIR, key);
  if (existsSync(join(dir, 'image.json'))) {
    log(`node VM image ${key} from the cache`);
    return imageFromDir(dir, JSON.parse(await readFile(join(dir, 'image.json'), 'utf8')) as ImageJson, false);
  }
  const partial = `${dir}.partial`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  const t0 = performance.now();
  const steps: Record<string, number> = {};
  const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const s = performance.now();
    log(`build ${key}: ${name}`);
    try {
      return await fn();
    } finally {
      steps[name] = Math.round((performance.now() - s) / 100) / 10;
    }
  };
  const rootfs = join(partial, 'rootfs');
  try {
    await step('debootstrap', () =>
      run('debootstrap', ['--variant=minbase', `--include=${DEBOOTSTRAP_INCLUDE.join(',')}`, 'trixie', rootfs, MIRROR], { timeoutMs: 900_000, env: { DEBIAN_FRONTEND: 'noninteractive' } }),
    );
    await step('runtime packages', () => installSidPackages(rootfs, versions));
    await step('configure', () => configureRoot(rootfs));
    const installed = await step('check versions', async () => {
      const out = await run('chroot', [rootfs, 'dpkg-query', '-W', '-f', '${Package}\t${Version}\n'], { timeoutMs: 60_000 });
      const map = Object.fromEntries(out.stdout.trim().split('\n').map((l) => l.split('\t') as [string, string]));
      const wrong = Object.entries(versions).filter(([p, v]) => map[p] !== v);
      if (wrong.length) throw new Error(`node VM image: installed versions differ from the key's: ${wrong.map(([p, v]) => `${p} ${map[p] ?? 'missing'} (wanted ${v})`).join(', ')}`);
      return out.stdout;
    });
    await writeFile(join(partial, 'packages.txt'), installed.split('\n').filter(Boolean).sort().join('\n') + '\n');
    await step('kernel', async () => {
      const boot = await readdir(join(rootfs, 'boot'));
      const vmlinuz = boot.find((f) => f.startsWith('vmlinuz-'));
      const initrd = boot.find((f) => f.startsWith('initrd.img-'));
      if (!vmlinuz || !initrd) throw new Error(`node VM image: no kernel or initrd in ${rootfs}/boot (${boot.join(' ')})`);
      await copyFile(join(rootfs, 'boot', vmlinuz), join(partial, 'vmlinuz'));
      await copyFile(join(rootfs, 'boot', initrd), join(partial, 'initrd.img'));
    });
    const hostKey = (await readFile(join(rootfs, 'etc/ssh/ssh_host_ed25519_key.pub'), 'utf8')).trim();
    await copyFile(join(rootfs, 'etc/ssh/ssh_host_ed25519_key.pub'), join(partial, 'ssh_host_ed25519_key.pub'));
    // mkfs.ext4 -d fills the file system from the directory: no loop device, no mount.
    await step('mkfs.ext4', () => run('mkfs.ext4', ['-q', '-F', '-L', 'kts-root', '-d', rootfs, join(partial, 'root.img'), ROOT_IMG_SIZE], { timeoutMs: 300_000 }));
    await step('remove rootfs', () => rm(rootfs, { recursive: true, force: true }));
    const meta: ImageJson = { key, recipeVersion: RECIPE_VERSION, mirror: MIRROR, versions, builtAt: new Date().toISOString(), buildSeconds: Math.round((performance.now() - t0) / 100) / 10, steps, hostKey };
    await writeFile(join(partial, 'image.json'), JSON.stringify(meta, null, 2) + '\n');
    await rename(partial, dir);
    log(`node VM image ${key} built in ${meta.buildSeconds} s`);
    return imageFromDir(dir, meta, true);
  } catch (err) {
    await run('umount', ['-l', join(rootfs, 'proc')], { allowFailure: true });
    await rm(partial, { recursive: true, force: true });
    throw err;
  }
}

/** containerd, runc and the CNI plugins from sid at the key's versions; sid pinned low so nothing else (libc6) comes from it. */
async function installSidPackages(rootfs: string, versions: Record<string, string>): Promise<void> {
  await writeFile(join(rootfs, 'etc/apt/sources.list'), `deb ${MIRROR} trixie main\ndeb [check-valid-until=no] ${MIRROR} sid main\n`);
  await writeFile(join(rootfs, 'etc/apt/preferences.d/sid-low'), 'Package: *\nPin: release n=sid\nPin-Priority: 100\n');
  // No service starts inside the chroot.
  await writeFile(join(rootfs, 'usr/sbin/policy-rc.d'), '#!/bin/sh\nexit 101\n');
  await chmod(join(rootfs, 'usr/sbin/policy-rc.d'), 0o755);
  await run('mount', ['-t', 'proc', 'proc', join(rootfs, 'proc')]);
  try {
    const env = { DEBIAN_FRONTEND: 'noninteractive' };
    await run('chroot', [rootfs, 'apt-get', 'update', '-q'], { timeoutMs: 300_000, env });
    await run('chroot', [rootfs, 'apt-get', 'install', '-y', '-q', '--no-install-recommends', ...SID_PACKAGES.map((p) => `${p}=${versions[p]}`)], { timeoutMs: 600_000, env });
    await run('chroot', [rootfs, 'apt-get', 'clean'], { timeoutMs: 60_000 });
  } finally {
    await run('umount', [join(rootfs, 'proc')], { allowFailure: true });
  }
  await rm(join(rootfs, 'usr/sbin/policy-rc.d'), { force: true });
  await rm(join(rootfs, 'var/lib/apt/lists'), { recursive: true, force: true });
  await mkdir(join(rootfs, 'var/lib/apt/lists/partial'), { recursive: true });
}

/** The guest's fixed setup: network, ssh from a key on the kernel command line, the project disk's mount point. */
async function configureRoot(rootfs: string): Promise<void> {
  const at = (p: string) => join(rootfs, p);
  await writeFile(at('etc/hostname'), 'kts-node\n');
  await writeFile(at('etc/hosts'), '127.0.0.1 localhost\n127.0.1.1 kts-node\n::1 localhost ip6-localhost ip6-loopback\n');
  // The project disk (a second virtio disk, labelled kubelet-ts) is made per run; nofail: a boot without it still comes up.
  await writeFile(at('etc/fstab'), '/dev/vda / ext4 rw,errors=remount-ro 0 1\nLABEL=kubelet-ts /opt/kubelet-ts ext4 ro,nofail 0 0\n');
  await mkdir(at('opt/kubelet-ts'), { recursive: true });
  await rm(at('etc/resolv.conf'), { force: true });
  await writeFile(at('etc/resolv.conf'), '# the kubelet-ts test VM has no DNS');
  await mkdir(at('etc/ssh/sshd_config.d'), { recursive: true });
  await writeFile(at('etc/ssh/sshd_config.d/kts.conf'), 'PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\n');
  await mkdir(at('usr/local/sbin'), { recursive: true });
  // Root's key comes with each boot (kernel command line), so the image holds no key of a run.
  await writeFile(
    at('usr/local/sbin/kts-authorized-key'),
    `#!/bin/sh
# Writes root's authorized_keys from the kts.authorized_key= word of the kernel command line.
set -e
for word in $(cat /proc/cmdline); do
  case "$word" in
    kts.authorized_key=*)
      mkdir -p -m 700 /root/.ssh
      printf '%s' "\${word#kts.authorized_key=}" | base64 -d > /root/.ssh/authorized_keys
      chmod 600 /root/.ssh/authorized_keys
      ;;
  esac
done
`,
  );
  await chmod(at('usr/local/sbin/kts-authorized-key'), 0o755);
  const units = at('etc/systemd/system');
  await writeFile(
    join(units, 'kts-authorized-key.service'),
    "[Unit]\nDescription=kubelet-ts test VM: root's ssh key from the kernel command line\nBefore=ssh.service\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/usr/local/sbin/kts-authorized-key\n\n[Install]\nWantedBy=multi-user.target\n",
  );
  // qemu's user-mode network has fixed addresses: no DHCP client needed.
  await writeFile(
    join(units, 'kts-net.service'),
    [
      '[Unit]',
      "Description=kubelet-ts test VM: static address on qemu's user-mode network",
      'Requires=sys-subsystem-net-devices-eth0.device',
      'After=sys-subsystem-net-devices-eth0.device',
      'Before=network.target network-online.target ssh.service',
      'Wants=network.target',
      '',
      '[Service]',
      'Type=oneshot',
      'RemainAfterExit=yes',
      'ExecStart=/usr/sbin/ip link set lo up',
      'ExecStart=/usr/sbin/ip link set eth0 up',
      'ExecStart=/usr/sbin/ip addr replace 10.0.2.15/24 dev eth0',
      'ExecStart=/usr/sbin/ip route replace default via 10.0.2.2',
      '',
      '[Install]',
      'WantedBy=multi-user.target network-online.target',
      '',
    ].join('\n'),
  );
  for (const [target, unit] of [['multi-user.target.wants', 'kts-authorized-key.service'], ['multi-user.target.wants', 'kts-net.service'], ['network-online.target.wants', 'kts-net.service']] as const) {
    await mkdir(join(units, target), { recursive: true });
    await rm(join(units, target, unit), { force: true });
    await symlink(`/etc/systemd/system/${unit}`, join(units, target, unit));
  }
  // Timers that would wake apt in a guest with no internet.
  for (const t of ['apt-daily.timer', 'apt-daily-upgrade.timer']) await rm(join(units, 'timers.target.wants', t), { force: true });
  // The interface is eth0 (the unit above), not a predictable name.
  await mkdir(at('etc/systemd/network'), { recursive: true });
  await writeFile(at('etc/systemd/network/99-default.link'), '');
}
