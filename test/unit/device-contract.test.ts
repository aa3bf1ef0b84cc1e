import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { checkDeviceProviderContract, describeDeviceProviderContract, startPluginsForTest, type DeviceProviderContractSubject } from '../../core/sdk/testing/index.ts';
import { MemoryDevices, memoryDevicePlugin } from '../fakes/memory-devices.ts';

/**
 * The device provider contract's own logic, against an in-process provider (test/fakes) that
 * keeps it, and against copies broken on purpose, one promise each: the contract must fail each
 * naming the broken rule. The proof that the gRPC adapter keeps it with upstream's sample device
 * plugin is test/integration/device-plugins.test.ts (and test/unit/device-plugins-grpc.test.ts
 * with a gRPC plugin written here).
 */

const R = 'example.com/memory-device';
let workDir: string;
let starts = 0;

/** A subject over a fresh fake; `breakIt` changes each provider the plugin makes (a restart makes a new one). */
function subject(breakIt?: (d: MemoryDevices, start: number) => void, resourceName = R, registerTimeoutMs = 2000): DeviceProviderContractSubject {
  const rootDir = path.join(workDir, `root-${++starts}`);
  let made = 0;
  const plugin = memoryDevicePlugin(() => {
    const d = new MemoryDevices(resourceName, ['Dev-1', 'Dev-2', 'Dev-3']);
    breakIt?.(d, ++made);
    return d;
  });
  return { resourceName: R, registerTimeoutMs, start: ({ pods }) => startPluginsForTest([plugin], { rootDir, pods }) };
}

describe('the device provider contract', function () {
  before(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-dc-'));
  });
  after(async () => {
    await fs.rm(workDir, { recursive: true, force: true });
  });

  describeDeviceProviderContract('in-memory devices (test fake)', async () => subject());

  /** A provider breaking one promise of the contract, and the rule that must name it. */
  const broken: Array<{ what: string; rule: RegExp; breakIt?: (d: MemoryDevices, start: number) => void; resourceName?: string; registerTimeoutMs?: number }> = [
    { what: 'registers a name outside the extended resource names', rule: /^registers its resource, an extended resource name/, resourceName: 'kubernetes.io/memory-device' },
    {
      what: 'never lists its devices',
      rule: /^registers its resource, an extended resource name, and lists its devices/,
      breakIt: (d) => {
        d.list = () => undefined as never;
      },
      registerTimeoutMs: 200,
    },
    {
      what: 'lists a device twice',
      rule: /^its device list names each device once/,
      breakIt: (d) => {
        d.devices.push({ id: 'Dev-1', health: 'Healthy' });
      },
    },
    {
      what: 'lists a health that is neither Healthy nor Unhealthy',
      rule: /^its device list names each device once.*with health Healthy or Unhealthy/,
      breakIt: (d) => {
        d.devices[1]!.health = 'Sick' as 'Healthy';
      },
    },
    {
      what: 'lists only unhealthy devices',
      rule: /^lists at least one healthy device/,
      breakIt: (d) => {
        for (const x of d.devices) x.health = 'Unhealthy';
      },
    },
    {
      what: 'answers allocate with a mount of the host\'s root',
      rule: /^allocate of a healthy device answers what the kubelet accepts/,
      breakIt: (d) => {
        d.allocate = async () => ({ mounts: [{ containerPath: '/host', hostPath: '/', readOnly: false }] });
      },
    },
    {
      what: 'allocates a device it never listed',
      rule: /^allocate of a device it does not list is refused/,
      breakIt: (d) => {
        d.allocate = async (ids) => ({ envs: { IDS: ids.join(',') } });
      },
    },
    {
      what: 'prefers devices that are not available, and too many',
      rule: /^preferredAllocation \(when offered\) answers the size asked/,
      breakIt: (d) => {
        d.preferredAllocation = async (req) => [...req.available, 'Dev-99'];
      },
    },
    {
      what: 'fails preStart',
      rule: /^preStart \(when required\) succeeds/,
      breakIt: (d) => {
        d.preStart = async () => Promise.reject(new Error('reset failed'));
      },
    },
    {
      what: 'lists a device it cannot allocate',
      rule: /^through the kubelet, every healthy device it lists goes to one pod each/,
      breakIt: (d) => {
        const allocate = d.allocate.bind(d);
        d.allocate = async (ids) => (ids.includes('Dev-3') ? Promise.reject(new Error('Dev-3 is on fire')) : allocate(ids));
      },
    },
    {
      what: 'comes back after a restart with other device IDs',
      rule: /^after a kubelet restart it registers its resource again, with the same devices/,
      breakIt: (d, start) => {
        if (start > 1) d.devices = d.devices.map((x) => ({ ...x, id: `${x.id}-again` }));
      },
    },
  ];

  for (const b of broken) {
    it(`a provider that ${b.what} fails its rule`, async function () {
      this.timeout(30_000);
      const failures = await checkDeviceProviderContract(subject(b.breakIt, b.resourceName, b.registerTimeoutMs));
      assert.ok(failures.some((f) => b.rule.test(f.rule)), `expected a failure of ${b.rule}; got ${JSON.stringify(failures, null, 2)}`);
    });
  }

  it('rules about what a provider does not offer are skipped, not failed', async function () {
    const failures = await checkDeviceProviderContract(subject((d) => {
      (d as { preferredAllocation?: unknown }).preferredAllocation = undefined;
      (d as { preStart?: unknown }).preStart = undefined;
    }));
    assert.deepEqual(failures, []);
  });
});
