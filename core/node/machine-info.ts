/**
 * What the machine is, read as upstream's kubelet gets it from cAdvisor: CPUs, memory, huge
 * pages, the capacity of the filesystem holding the root dir, and the identifiers and versions
 * of status.nodeInfo. The parsers are pure functions of the files' text (unit-tested with
 * samples); `readMachineInfo` reads the files, under `fsRoot` for tests.
 */
import { statfs, readFile, readdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface HugePageInfo {
  /** The page size in KiB (the number in /sys/kernel/mm/hugepages/hugepages-<n>kB). */
  pageSizeKiB: number;
  /** Pages reserved (nr_hugepages). */
  numPages: number;
}

export interface MachineInfo {
  /** Online logical CPUs. */
  numCores: number;
  /** MemTotal in bytes. */
  memoryCapacityBytes: bigint;
  /** Size of the filesystem holding the kubelet's root dir, in bytes (undefined when statfs failed). */
  rootfsCapacityBytes: bigint | undefined;
  hugePages: HugePageInfo[];
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
}

/** MemTotal of /proc/meminfo in bytes (the file says kB, meaning KiB), as cAdvisor reads it. */
export function parseMemTotal(meminfo: string): bigint {
  const m = /^MemTotal:\s*(\d+)\s*kB\s*$/m.exec(meminfo);
  if (!m) throw new Error('no MemTotal line in /proc/meminfo');
  return BigInt(m[1]!) * 1024n;
}

/** The number of CPUs in a kernel CPU list such as /sys/devices/system/cpu/online ("0-3,6,8-9"). */
export function parseCpuList(text: string): number {
  let n = 0;
  for (const part of text.trim().split(',')) {
    if (!part) continue;
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`invalid CPU list ${JSON.stringify(text.trim())}`);
    const lo = Number(m[1]);
    const hi = m[2] !== undefined ? Number(m[2]) : lo;
    if (hi < lo) throw new Error(`invalid CPU range ${part}`);
    n += hi - lo + 1;
  }
  return n;
}

/** The OS image as cAdvisor reports it: PRETTY_NAME of os-release, else NAME, else 'Linux'. */
export function parseOsImage(osRelease: string): string {
  const fields = new Map<string, string>();
  for (const line of osRelease.split('\n')) {
    const m = /^\s*([A-Z0-9_]+)=(.*)$/.exec(line);
    if (!m) continue;
    let value = m[2]!.trim();
    const q = value[0];
    if ((q === '"' || q === "'") && value.endsWith(q) && value.length >= 2) {
      value = value.slice(1, -1);
      if (q === '"') value = value.replace(/\\(["\\$`])/g, '$1');
    }
    fields.set(m[1]!, value);
  }
  return fields.get('PRETTY_NAME') || fields.get('NAME') || 'Linux';
}

/** The page size (KiB) in a hugepages directory name such as 'hugepages-2048kB'. */
export function parseHugePageDir(name: string): number | undefined {
  const m = /^hugepages-(\d+)kB$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

export interface ReadMachineInfoOptions {
  /** The directory whose filesystem is ephemeral-storage (the kubelet's rootDir). */
  rootDir: string;
  /** Prefix of /proc, /sys, /etc (tests); default '/'. */
  fsRoot?: string;
}

/** Reads the machine. Missing identifiers are '' (as cAdvisor leaves them); missing capacities throw or are undefined. */
export async function readMachineInfo(opts: ReadMachineInfoOptions): Promise<MachineInfo> {
  const root = opts.fsRoot ?? '/';
  const at = (p: string) => path.join(root, p);
  const text = (p: string) => readFile(at(p), 'utf8');
  const firstOf = async (paths: string[], clean: (s: string) => string = (s) => s.trim()): Promise<string> => {
    for (const p of paths) {
      const value = await text(p).then(clean, () => '');
      if (value) return value;
    }
    return '';
  };

  const numCores = await text('/sys/devices/system/cpu/online').then(parseCpuList, () => os.cpus().length || os.availableParallelism());
  const memoryCapacityBytes = parseMemTotal(await text('/proc/meminfo'));
  const hugePages: HugePageInfo[] = [];
  for (const name of await readdir(at('/sys/kernel/mm/hugepages')).catch(() => [] as string[])) {
    const pageSizeKiB = parseHugePageDir(name);
    if (pageSizeKiB === undefined) continue;
    const numPages = Number((await text(`/sys/kernel/mm/hugepages/${name}/nr_hugepages`).catch(() => '0')).trim()) || 0;
    hugePages.push({ pageSizeKiB, numPages });
  }
  hugePages.sort((a, b) => a.pageSizeKiB - b.pageSizeKiB);
  const stripNul = (s: string) => s.replace(/\0+$/, '').trim();
  return {
    numCores,
    memoryCapacityBytes,
    rootfsCapacityBytes: await filesystemCapacity(opts.rootDir),
    hugePages,
    // cAdvisor's --machine_id_file default: /etc/machine-id, then /var/lib/dbus/machine-id.
    machineID: await firstOf(['/etc/machine-id', '/var/lib/dbus/machine-id']),
    // cAdvisor's GetSystemUUID: DMI (root-only on most machines), then the PowerPC device tree, then
    // /etc/machine-id (its s390x fallback, which also serves any machine without DMI).
    systemUUID: await firstOf(['/sys/class/dmi/id/product_uuid', '/proc/device-tree/system-id', '/proc/device-tree/vm,uuid', '/etc/machine-id'], stripNul),
    bootID: await firstOf(['/proc/sys/kernel/random/boot_id']),
    kernelVersion: os.release(),
    osImage: await text('/etc/os-release').then(parseOsImage, () => 'Linux'),
  };
}

/** Capacity in bytes of the filesystem holding `dir` (its nearest existing ancestor when it does not exist yet). */
export async function filesystemCapacity(dir: string): Promise<bigint | undefined> {
  let p = path.resolve(dir);
  for (;;) {
    try {
      const s = await statfs(p, { bigint: true });
      return s.blocks * s.bsize;
    } catch (err) {
      const parent = path.dirname(p);
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || parent === p) return undefined;
      p = parent;
    }
  }
}

/** GOARCH for a Node architecture (status.nodeInfo.architecture and the kubernetes.io/arch label). */
export function goArch(arch: string = process.arch): string {
  const map: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64', loong64: 'loong64', mips: 'mips', mipsel: 'mipsle' };
  return map[arch] ?? arch;
}

/** GOOS for a Node platform. */
export function goOS(platform: string = process.platform): string {
  return platform === 'win32' ? 'windows' : platform;
}
