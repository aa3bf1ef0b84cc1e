import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { goArch, parseCpuList, parseHugePageDir, parseMemTotal, parseOsImage, readMachineInfo } from '../../core/node/machine-info.ts';

const MEMINFO = `MemTotal:        4050864 kB
MemFree:          190228 kB
MemAvailable:    2794308 kB
Buffers:          151780 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
`;

const DEBIAN_OS_RELEASE = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
ID=debian
HOME_URL="https://www.debian.org/"
`;

describe('machine info', function () {
  it('reads MemTotal as bytes (the file says kB, meaning KiB)', function () {
    assert.equal(parseMemTotal(MEMINFO), 4050864n * 1024n);
    assert.throws(() => parseMemTotal('MemFree: 1 kB\n'), /no MemTotal line/);
  });

  it('reads the OS image as cAdvisor: PRETTY_NAME, else NAME, else Linux', function () {
    assert.equal(parseOsImage(DEBIAN_OS_RELEASE), 'Debian GNU/Linux 12 (bookworm)');
    assert.equal(parseOsImage("NAME='Alpine Linux'\nID=alpine\n"), 'Alpine Linux');
    assert.equal(parseOsImage('PRETTY_NAME="A \\"quoted\\" name"\n'), 'A "quoted" name');
    assert.equal(parseOsImage('ID=x\n'), 'Linux');
  });

  it('counts CPUs in a kernel CPU list', function () {
    assert.equal(parseCpuList('0-1\n'), 2);
    assert.equal(parseCpuList('0-3,6,8-9'), 7);
    assert.equal(parseCpuList('0'), 1);
    assert.throws(() => parseCpuList('zero'), /invalid CPU list/);
  });

  it('reads huge page sizes from their directory names', function () {
    assert.equal(parseHugePageDir('hugepages-2048kB'), 2048);
    assert.equal(parseHugePageDir('hugepages-1048576kB'), 1048576);
    assert.equal(parseHugePageDir('something'), undefined);
  });

  it('maps Node architectures to GOARCH', function () {
    assert.deepEqual(['x64', 'arm64', 'arm', 'ppc64', 's390x'].map((a) => goArch(a)), ['amd64', 'arm64', 'arm', 'ppc64le', 's390x']);
  });

  it('reads a machine from its files, falling back as cAdvisor does when DMI is unreadable', async function () {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-machine-'));
    try {
      const write = async (p: string, text: string) => {
        await fs.mkdir(path.dirname(path.join(root, p)), { recursive: true });
        await fs.writeFile(path.join(root, p), text);
      };
      await write('proc/meminfo', MEMINFO);
      await write('etc/os-release', DEBIAN_OS_RELEASE);
      await write('etc/machine-id', '0123456789abcdef0123456789abcdef\n');
      await write('proc/sys/kernel/random/boot_id', 'b0b0b0b0-0000-4000-8000-000000000000\n');
      await write('sys/devices/system/cpu/online', '0-3\n');
      await write('sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages', '16\n');
      await write('sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages', '0\n');
      const info = await readMachineInfo({ rootDir: path.join(root, 'var/lib/kubelet'), fsRoot: root });
      assert.equal(info.numCores, 4);
      assert.equal(info.memoryCapacityBytes, 4050864n * 1024n);
      assert.deepEqual(info.hugePages, [{ pageSizeKiB: 2048, numPages: 16 }, { pageSizeKiB: 1048576, numPages: 0 }]);
      assert.equal(info.machineID, '0123456789abcdef0123456789abcdef');
      assert.equal(info.systemUUID, '0123456789abcdef0123456789abcdef', 'no DMI: the machine-id, as cAdvisor');
      assert.equal(info.bootID, 'b0b0b0b0-0000-4000-8000-000000000000');
      assert.equal(info.osImage, 'Debian GNU/Linux 12 (bookworm)');
      assert.equal(info.kernelVersion, os.release());
      assert.ok(info.rootfsCapacityBytes! > 0n, 'statfs of the nearest existing parent of a root dir not made yet');
      await write('sys/class/dmi/id/product_uuid', 'EC2A1B2C-0000-1111-2222-333344445555\n');
      await write('var/lib/dbus/machine-id', 'dbus-id\n');
      await fs.rm(path.join(root, 'etc/machine-id'));
      const again = await readMachineInfo({ rootDir: root, fsRoot: root });
      assert.deepEqual([again.systemUUID, again.machineID], ['EC2A1B2C-0000-1111-2222-333344445555', 'dbus-id']);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
