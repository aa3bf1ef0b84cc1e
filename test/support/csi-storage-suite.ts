import fs from 'node:fs/promises';
import path from 'node:path';
import type { V1CSIPersistentVolumeSource } from '@kubernetes/client-node';
import { clusterSuite, type ClusterSuite, type SuiteNode } from './cluster-suite.ts';
import { CsiController } from './csi-controller.ts';
import { RealCsiDriver, realCsiDriverOrSkip, unpackCsiBinaries } from './csi-real-driver.ts';
import type { TestKubelet } from './test-kubelet.ts';
import { waitFor } from './wait-for.ts';

/** The upstream CSI hostpath driver's name (../shared/csi). */
export const HOSTPATH_DRIVER = 'hostpath.csi.k8s.io';

export interface StorageNode { node: SuiteNode; kubelet: TestKubelet; driver: RealCsiDriver; rootDir: string }

export interface BoundClaimOptions {
  /** A raw block volume (volumeMode Block on the volume, the PV and the claim). */
  block?: boolean;
  /** More of the PV's csi source (secret refs, ...). */
  csi?: Partial<V1CSIPersistentVolumeSource>;
  /** The PV's and claim's class; default none (''). */
  storageClassName?: string;
}

/** A claim bound to a volume of the driver, and the driver's Controller service (open until the test's cleanup). */
export interface BoundClaim { pv: string; volumeHandle: string; controller: CsiController }

/**
 * For a describe of storage tests on the real control plane: the cluster suite, the hostpath
 * driver's binaries unpacked once (skipped, or failed with CI=true, where they are missing), and
 * `storageNode`: a kubelet-ts node with csi-grpc and the driver registered on it (started with
 * `driverArgs`), the driver stopped after the kubelet; `preBoundVolume`: a volume made in the
 * driver with a PV waiting for a claim of a given name; and `boundClaim`: that, and the claim.
 */
export function csiStorageSuite(prefix: string): {
  suite: ClusterSuite;
  storageNode(what: string, driverArgs?: string[]): Promise<StorageNode>;
  preBoundVolume(driver: RealCsiDriver, ns: string, claim: string, opts?: BoundClaimOptions): Promise<BoundClaim>;
  boundClaim(driver: RealCsiDriver, ns: string, claim: string, opts?: BoundClaimOptions): Promise<BoundClaim>;
} {
  const suite = clusterSuite(prefix);
  let bin = '';
  before(async function () {
    realCsiDriverOrSkip(this);
    if (!suite.dir) return;
    bin = path.join(suite.dir, 'bin');
    await unpackCsiBinaries(bin);
  });
  async function storageNode(what: string, driverArgs: string[] = []): Promise<StorageNode> {
    const node = suite.node(what);
    const rootDir = path.join(node.dir, 'root');
    const driver = new RealCsiDriver({ binDir: bin, dir: `${node.dir}-csi`, registryDir: path.join(rootDir, 'plugins_registry'), nodeId: node.name, ...(driverArgs.length ? { driverArgs } : {}) });
    suite.onCleanup(async () => {
      await driver.stop();
      await fs.rm(`${node.dir}-csi`, { recursive: true, force: true });
    });
    await driver.start();
    const kubelet = await suite.kubelet(node, { plugins: [['csi-grpc', { rescanSeconds: 0.3, callTimeoutSeconds: 10 }]], config: { syncFrequencyMs: 2000 } });
    await suite.nodeReady(node.name);
    return { node, kubelet, driver, rootDir };
  }
  /**
   * A 16Mi volume made in the driver (playing the external-provisioner) and a PV for it pre-bound
   * to claim `claim` of `ns`, which someone else makes (the test, a StatefulSet, the ephemeral
   * volume controller); both removed after the test.
   */
  async function preBoundVolume(driver: RealCsiDriver, ns: string, claim: string, opts: BoundClaimOptions = {}): Promise<BoundClaim> {
    const controller = new CsiController(driver.csiSocket);
    const pv = suite.uniqueName('pv');
    const volumeHandle = await controller.createVolume(pv, 16 * 1024 * 1024, opts.block ? { block: true } : {});
    suite.onCleanup(async () => {
      await controller.deleteVolume(volumeHandle).catch(() => {});
      controller.close();
    });
    await suite.core.createPersistentVolume({
      body: {
        metadata: { name: pv },
        spec: {
          capacity: { storage: '16Mi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: opts.storageClassName ?? '',
          claimRef: { namespace: ns, name: claim }, csi: { driver: HOSTPATH_DRIVER, volumeHandle, volumeAttributes: { kind: 'test' }, ...opts.csi }, volumeMode: opts.block ? 'Block' : 'Filesystem',
        },
      },
    });
    suite.onCleanup(() => suite.core.deletePersistentVolume({ name: pv }));
    return { pv, volumeHandle, controller };
  }

  /** preBoundVolume, and the claim made by the test; waits until it is Bound. */
  async function boundClaim(driver: RealCsiDriver, ns: string, claim: string, opts: BoundClaimOptions = {}): Promise<BoundClaim> {
    const { pv, volumeHandle, controller } = await preBoundVolume(driver, ns, claim, opts);
    const volumeMode = opts.block ? 'Block' : 'Filesystem';
    const storageClassName = opts.storageClassName ?? '';
    await suite.core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: claim }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '16Mi' } }, volumeName: pv, storageClassName, volumeMode } },
    });
    await waitFor(`PVC ${ns}/${claim} Bound with 16Mi`, async () => {
      const c = await suite.core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: ns });
      return c.status?.phase === 'Bound' && c.status.capacity?.storage === '16Mi';
    }, 60_000, 300);
    return { pv, volumeHandle, controller };
  }

  return { suite, storageNode, preBoundVolume, boundClaim };
}
