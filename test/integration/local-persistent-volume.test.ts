import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PatchStrategy, setHeaderOptions, type V1PersistentVolumeSpec, type V1Pod } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { waitFor } from '../support/wait-for.ts';
import { run } from '../../tools/node-env/util.ts';
import { isMountPoint, mountsUnder } from '../../core/volumes/mount-utils.ts';

/**
 * PersistentVolumes whose source the kubelet mounts itself: `local` (a directory of the node,
 * bind-mounted into the pod, given to its fsGroup) and `hostPath` (the host path itself), each
 * claimed by a pod of a real API server on kubelet-ts with real containerd.
 */
describe('local and hostPath PersistentVolumes on the real control plane', function () {
  this.timeout(180_000);
  const suite = clusterSuite('kts-localpv-');

  /** A PV of `source` pre-bound to claim `claim` of `ns`, the claim Bound; both deleted after the test. */
  async function boundClaim(ns: string, claim: string, source: Partial<V1PersistentVolumeSpec>, nodeName: string): Promise<string> {
    const pv = suite.uniqueName('pv');
    await suite.core.createPersistentVolume({
      body: {
        metadata: { name: pv },
        spec: {
          capacity: { storage: '1Mi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: '',
          claimRef: { namespace: ns, name: claim },
          ...(source.local ? { nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [nodeName] }] }] } } } : {}),
          ...source,
        },
      },
    });
    suite.onCleanup(() => suite.core.deletePersistentVolume({ name: pv }));
    await suite.core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: claim }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } }, volumeName: pv, storageClassName: '', volumeMode: source.volumeMode ?? 'Filesystem' } },
    });
    await waitFor(`PVC ${ns}/${claim} Bound`, async () => (await suite.core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: ns })).status?.phase === 'Bound', 60_000, 300);
    return pv;
  }

  /** Runs a busybox pod with the claim at /data (with `device`: a block claim as /dev/xvda) until it Succeeded. */
  async function runClaimPod(ns: string, name: string, nodeName: string, claim: string, script: string, fsGroup?: number, opts: { device?: boolean } = {}): Promise<V1Pod> {
    const use = opts.device ? { volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] } : { volumeMounts: [{ name: 'data', mountPath: '/data' }] };
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name },
        spec: {
          nodeName, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, restartPolicy: 'Never',
          ...(fsGroup !== undefined ? { securityContext: { runAsUser: 1000, runAsGroup: 1000, fsGroup } } : {}),
          containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', script], ...use }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
        },
      },
    });
    return waitFor(`pod ${ns}/${name} Succeeded`, async () => {
      const p = await suite.core.readNamespacedPod({ name, namespace: ns });
      if (p.status?.phase === 'Failed') throw new Error(`pod ${name} failed: ${JSON.stringify(p.status.containerStatuses?.[0]?.state)}`);
      return p.status?.phase === 'Succeeded' ? p : undefined;
    }, 90_000, 300);
  }

  async function deletePod(ns: string, name: string): Promise<void> {
    await suite.core.deleteNamespacedPod({ name, namespace: ns }).catch(() => {});
    await waitFor(`pod ${ns}/${name} gone`, async () => (await suite.core.readNamespacedPod({ name, namespace: ns }).then(() => false, () => true)), 60_000, 300);
  }

  it("a local PV: the pod writes into the node's directory through a bind mount, as its fsGroup; the mount goes with the pod, the data stays", async function () {
    const node = suite.node('localpv');
    const kubelet = await suite.kubelet(node);
    const ns = await suite.namespace('localpv');
    const hostDir = path.join(suite.dir, `${node.name}-disk`);
    await fs.mkdir(hostDir, { recursive: true, mode: 0o755 });
    suite.onCleanup(() => fs.rm(hostDir, { recursive: true, force: true }));
    await boundClaim(ns, 'data', { local: { path: hostDir } }, node.name);
    const pod = await runClaimPod(ns, 'writer', node.name, 'data', 'echo from-the-pod > /data/f && stat -c %g /data', 4321);
    const uid = pod.metadata!.uid!;
    assert.equal(await fs.readFile(path.join(hostDir, 'f'), 'utf8'), 'from-the-pod\n');
    const st = await fs.stat(hostDir);
    assert.deepEqual([st.gid, (st.mode & 0o2070).toString(8)], [4321, '2070'], "the node's directory belongs to the pod's fsGroup: group rwx, setgid");
    // Finished (Succeeded), the pod gives its volume back at once, as upstream's kubelet: the
    // API server deletes a terminal pod without waiting for the kubelet.
    const podDir = path.join(kubelet.config.rootDir, 'pods', uid);
    // The teardown unmounts, then removes the dir: a look between the two sees the dir without its mount.
    const volumeDirs = () => fs.readdir(path.join(podDir, 'volumes', 'kubernetes.io~local')).then((l) => l.length, () => 0);
    await waitFor("the finished pod's bind mount released and its volume dir gone", async () => (await mountsUnder(podDir)).length === 0 && (await volumeDirs()) === 0, 30_000, 300);
    await deletePod(ns, 'writer');
    assert.equal(await fs.readFile(path.join(hostDir, 'f'), 'utf8'), 'from-the-pod\n', 'the data stays on the node');
    assert.equal(await isMountPoint(hostDir), false);
  });

  it('a local PV whose path is missing: the pod waits with a FailedMount event naming the PV and the path', async function () {
    const node = suite.node('localpv-missing');
    await suite.kubelet(node);
    const ns = await suite.namespace('localpv-missing');
    const missing = path.join(suite.dir, `${node.name}-nothing-here`);
    const pv = await boundClaim(ns, 'data', { local: { path: missing } }, node.name);
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'waits' }, spec: { nodeName: node.name, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, containers: [{ name: 'main', image: suite.env.images.busybox, command: ['true'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] } },
    });
    await suite.podEvent(ns, 'waits', 'FailedMount', new RegExp(`local PersistentVolume ${pv}: path "${missing}" does not exist on this node`));
    assert.equal((await suite.core.readNamespacedPod({ name: 'waits', namespace: ns })).status?.phase, 'Pending');
    await deletePod(ns, 'waits');
  });

  it("a local block PV (volumeMode Block): the node's device is the container's /dev/xvda, written raw", async function () {
    const node = suite.node('localblock');
    await suite.kubelet(node);
    const ns = await suite.namespace('localblock');
    // A loop device over a file stands for the node's disk.
    const backing = path.join(suite.dir, `${node.name}-disk.img`);
    await fs.writeFile(backing, Buffer.alloc(1024 * 1024));
    const loop = (await run('losetup', ['--find', '--show', backing])).stdout.trim();
    suite.onCleanup(async () => {
      await run('losetup', ['--detach', loop]).catch(() => {});
      await fs.rm(backing, { force: true });
    });
    await boundClaim(ns, 'disk', { local: { path: loop }, volumeMode: 'Block' }, node.name);
    await runClaimPod(ns, 'raw', node.name, 'disk', '[ -b /dev/xvda ] && printf written-raw | dd of=/dev/xvda conv=fsync', undefined, { device: true });
    const fd = await fs.open(loop, 'r');
    const head = Buffer.alloc(11);
    await fd.read(head, 0, 11, 0).finally(() => fd.close());
    assert.equal(head.toString(), 'written-raw', 'the bytes are on the node\'s device');
    await deletePod(ns, 'raw');
  });

  it('a local PV on a block device (volumeMode Filesystem): formatted with its fsType on first use, mounted; the next pod finds the data', async function () {
    const node = suite.node('localblockfs');
    const kubelet = await suite.kubelet(node);
    const ns = await suite.namespace('localblockfs');
    // A blank loop device stands for the node's new disk (upstream's e2e "blockfswithformat").
    const backing = path.join(suite.dir, `${node.name}-disk.img`);
    await fs.writeFile(backing, Buffer.alloc(16 * 1024 * 1024));
    const loop = (await run('losetup', ['--find', '--show', backing])).stdout.trim();
    suite.onCleanup(async () => {
      await run('losetup', ['--detach', loop]).catch(() => {});
      await fs.rm(backing, { force: true });
    });
    await boundClaim(ns, 'disk', { local: { path: loop, fsType: 'ext4' } }, node.name);
    const first = await runClaimPod(ns, 'first', node.name, 'disk', 'echo from-first > /data/f && stat -c %g /data', 4321);
    assert.equal((await run('blkid', ['-p', '-s', 'TYPE', '-o', 'value', loop])).stdout.trim(), 'ext4', 'the blank device was formatted ext4');
    const podDir = path.join(kubelet.config.rootDir, 'pods', first.metadata!.uid!);
    await waitFor("the finished pod's mount released", async () => (await mountsUnder(podDir)).length === 0, 30_000, 300);
    await deletePod(ns, 'first');
    // Mounted again, not formatted again: what the first pod wrote is there.
    await runClaimPod(ns, 'second', node.name, 'disk', '[ "$(cat /data/f)" = from-first ]');
    await deletePod(ns, 'second');
  });

  it("a local PV grown under a running pod: the claim gets the PV's size, with upstream's FileSystemResizeSuccessful event", async function () {
    // Upstream's e2e "loopback local block volume should support online expansion on node": the
    // PV is a directory where the admin mounted a disk; the admin grows the disk and the PV, the
    // node has nothing to grow (upstream's local NodeExpand is a no-op for a directory) and
    // finishes the resize on the claim. (A PV naming the device itself gets resize2fs, which
    // needs CAP_SYS_RESOURCE: this machine's root lacks it, so that path is not tested here.)
    const node = suite.node('localgrow');
    await suite.kubelet(node);
    const ns = await suite.namespace('localgrow');
    const hostDir = path.join(suite.dir, `${node.name}-disk`);
    await fs.mkdir(hostDir, { recursive: true, mode: 0o755 });
    suite.onCleanup(() => fs.rm(hostDir, { recursive: true, force: true }));
    const pv = await boundClaim(ns, 'data', { local: { path: hostDir } }, node.name);
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'runs' }, spec: { nodeName: node.name, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }] } },
    });
    await waitFor('pod runs Running', async () => (await suite.core.readNamespacedPod({ name: 'runs', namespace: ns })).status?.phase === 'Running', 90_000, 300);
    await suite.core.patchPersistentVolume({ name: pv, body: { spec: { capacity: { storage: '32Mi' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await waitFor("the claim's status capacity 32Mi", async () => (await suite.core.readNamespacedPersistentVolumeClaim({ name: 'data', namespace: ns })).status?.capacity?.storage === '32Mi', 60_000, 500);
    const events = (await suite.core.listNamespacedEvent({ namespace: ns })).items;
    assert.ok(events.some((e) => e.reason === 'FileSystemResizeSuccessful' && e.involvedObject.name === 'runs' && e.message === `MountVolume.NodeExpandVolume succeeded for volume "${pv}" ${node.name}`), 'the pod has the resize event');
    await deletePod(ns, 'runs');
  });

  it('a hostPath PV: the pod reads and writes the host path itself', async function () {
    const node = suite.node('hostpathpv');
    await suite.kubelet(node);
    const ns = await suite.namespace('hostpathpv');
    const hostDir = path.join(suite.dir, `${node.name}-hostpath`);
    await fs.mkdir(hostDir, { recursive: true });
    await fs.writeFile(path.join(hostDir, 'in'), 'from-the-node');
    suite.onCleanup(() => fs.rm(hostDir, { recursive: true, force: true }));
    await boundClaim(ns, 'data', { hostPath: { path: hostDir, type: 'Directory' } }, node.name);
    await runClaimPod(ns, 'rw', node.name, 'data', 'cat /data/in > /data/out');
    assert.equal(await fs.readFile(path.join(hostDir, 'out'), 'utf8'), 'from-the-node');
    await deletePod(ns, 'rw');
  });
});
