import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeVolumeContract, startPluginsForTest, type PluginsUnderTest } from '../../core/sdk/testing/index.ts';
import { FakeCsiDriver } from '../fakes/csi-hostpath-driver.ts';
import { RealCsiDriver, realCsiDriverOrSkip, unpackCsiBinaries } from '../support/csi-real-driver.ts';

/**
 * The volume-provider contract (kubelet-ts/testing) against csi-grpc, applied as a kubelet
 * applies it, with the upstream CSI hostpath driver and with the test's own driver: inline
 * volumes set up idempotently, adopted after a restart (not published again), torn down to
 * nothing, twice without error. Each "kubelet start" waits for the driver to register (a
 * restarted kubelet serves a driver's volumes only once it registered again).
 */
async function registered(countNodeGetInfo: () => Promise<number>, before: number): Promise<void> {
  for (let i = 0; i < 200 && (await countNodeGetInfo()) <= before; i++) await sleep(50);
  if ((await countNodeGetInfo()) <= before) throw new Error('the CSI driver did not register within 10 s');
}

/** csi-grpc applied and started as a kubelet (re)start does, once the driver registered with it. */
async function startCsiGrpc(rootDir: string, countNodeGetInfo: () => Promise<number>): Promise<PluginsUnderTest> {
  const n = await countNodeGetInfo();
  const plugins = await startPluginsForTest([['csi-grpc', { rescanSeconds: 0.2, callTimeoutSeconds: 10 }]], { rootDir });
  await registered(countNodeGetInfo, n);
  return plugins;
}

describe('csi-grpc keeps the volume-provider contract', function () {
  this.timeout(120_000);
  let dir: string;
  let real: RealCsiDriver | undefined;
  let fake: FakeCsiDriver | undefined;
  before(async function () {
    dir = await fs.mkdtemp('/tmp/kts-csi-contract-');
  });
  after(async function () {
    await real?.stop().catch(() => {});
    await fake?.stop().catch(() => {});
    await fs.rm(dir, { recursive: true, force: true });
  });

  describe('with the upstream hostpath driver', function () {
    before(function () {
      realCsiDriverOrSkip(this);
    });
    describeVolumeContract('csi-grpc + hostpath.csi.k8s.io', async () => {
      const rootDir = path.join(dir, 'real-root');
      const bin = path.join(dir, 'bin');
      await unpackCsiBinaries(bin);
      real = new RealCsiDriver({ binDir: bin, dir: path.join(dir, 'hostpath'), registryDir: path.join(rootDir, 'plugins_registry'), nodeId: 'contract-node' });
      await real.start();
      const count = async () => (await real!.calls('NodeGetInfo')).length;
      return {
        type: 'csi',
        volume: (name) => ({ name, csi: { driver: real!.driverName } }),
        rootDir,
        start: () => startCsiGrpc(rootDir, count),
      };
    });
  });

  describe("with the tests' own driver (staging capable)", function () {
    describeVolumeContract('csi-grpc + the fake hostpath driver', async () => {
      const rootDir = path.join(dir, 'fake-root');
      fake = new FakeCsiDriver({ name: 'contract.csi.test', dir: path.join(dir, 'fake'), registryDir: path.join(rootDir, 'plugins_registry'), stage: true });
      await fake.start();
      const count = async () => fake!.count('NodeGetInfo');
      return {
        type: 'csi',
        volume: (name) => ({ name, csi: { driver: 'contract.csi.test' } }),
        rootDir,
        start: () => startCsiGrpc(rootDir, count),
      };
    });
  });
});
