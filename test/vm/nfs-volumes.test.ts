import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { kubeletRequest } from '../support/kubelet-https.ts';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';
import { deleteVmPod, runVmPod } from '../support/node-vm-pods.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * nfs volumes and PersistentVolumes (plugins/nfs, in the default bundle) on the node VM: the
 * guest's kernel NFS server (Debian's nfs-kernel-server in the image) exports a directory to
 * the guest itself, and kubelet-ts mounts it with mount.nfs (nfs-common) as upstream's in-tree
 * plugin does. The host's kernel has no NFS client, so this runs only in the VM.
 */
const EXPORT_DIR = '/srv/kts-nfs';
const EXPORTS_FILE = '/etc/exports.d/kts-nfs.exports';

describe('node VM: nfs volumes mounted by the default bundle\'s nfs plugin', function () {
  this.timeout(600_000);
  const suite = clusterSuite('kts-vm-nfs-');
  let t: TestNodeVm;

  before(async function () {
    this.timeout(1_200_000);
    // The default bundle (kubelet.config.ts): no plugins config of the test's own.
    t = await systemdNodeVmOrSkip(this);
    await t.ssh(`rm -rf ${EXPORT_DIR} && mkdir -p ${EXPORT_DIR} /etc/exports.d && chmod 0777 ${EXPORT_DIR}`);
    await t.vm.writeFile(EXPORTS_FILE, `${EXPORT_DIR} 127.0.0.1(rw,sync,no_subtree_check,no_root_squash)\n`);
    await t.ssh('systemctl restart nfs-server && exportfs -ra');
  });

  after(async function () {
    if (!t) return;
    await t.ssh(`rm -f ${EXPORTS_FILE} && exportfs -ra; systemctl stop nfs-server; rm -rf ${EXPORT_DIR}`, { allowFailure: true }).catch(() => {});
  });

  const succeeded = (p: V1Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
  /** The log of a pod's container `c` in the guest. */
  const logOf = (ns: string, pod: V1Pod) => t.readFile(`/var/log/pods/${ns}_${pod.metadata!.name}_${pod.metadata!.uid}/c/0.log`);
  /** The guest's nfs mounts under the pod's directory. */
  const nfsMountsOf = async (uid: string) => (await t.ssh(`grep ' nfs4\\? ' /proc/mounts | grep -F '/pods/${uid}/' || true`)).stdout.trim();

  /** A PersistentVolume on the export with `mountOptions`, and the claim `claim` bound to it. */
  async function boundNfsClaim(ns: string, claim: string, mountOptions: string[]): Promise<void> {
    const pv = suite.uniqueName(`pv-nfs-${claim}`);
    await t.core.createPersistentVolume({
      body: {
        metadata: { name: pv },
        spec: {
          capacity: { storage: '1Gi' }, accessModes: ['ReadWriteMany'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: '',
          mountOptions,
          claimRef: { namespace: ns, name: claim },
          nfs: { server: '127.0.0.1', path: EXPORT_DIR },
        },
      },
    });
    suite.onCleanup(() => t.core.deletePersistentVolume({ name: pv }));
    await t.core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: claim }, spec: { accessModes: ['ReadWriteMany'], resources: { requests: { storage: '1Gi' } }, volumeName: pv, storageClassName: '' } },
    });
    await waitFor(`PVC ${ns}/${claim} Bound`, async () => (await t.core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: ns })).status?.phase === 'Bound', 60_000, 500);
  }

  it('a PersistentVolume with an nfs source: the pod writes through it with the PV\'s mountOptions, and its mount is gone with the pod', async function () {
    const ns = await suite.namespace('vm-nfs-pv');
    await boundNfsClaim(ns, 'shared', ['nfsvers=4.2', 'hard']);

    const pod = await runVmPod(t, ns, 'nfs-writer', {
      restartPolicy: 'Never',
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', 'echo hello-from-pod > /data/hello && grep " /data " /proc/mounts'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'shared' } }],
    }, { until: succeeded });
    const log = await logOf(ns, pod);
    assert.equal(pod.status?.phase, 'Succeeded', `the writer's status: ${JSON.stringify(pod.status?.containerStatuses)}\n${log}`);
    assert.match(log, /127\.0\.0\.1:\/srv\/kts-nfs \/data nfs4 rw,.*vers=4\.2,.*hard/, `the container's /data is the export, with the PV's options:\n${log}`);
    assert.equal((await t.readFile(`${EXPORT_DIR}/hello`)).trim(), 'hello-from-pod', 'the file is on the server');

    await deleteVmPod(t, ns, 'nfs-writer');
    await waitFor('no nfs mount of the pod left in the guest', async () => (await nfsMountsOf(pod.metadata!.uid!)) === '', 60_000, 1000);
  });

  it('an inline nfs volume with readOnly: the pod reads what is there and cannot write', async function () {
    const ns = await suite.namespace('vm-nfs-inline');
    await t.vm.writeFile(`${EXPORT_DIR}/seed`, 'seeded-on-server\n');
    const script = 'cat /data/seed; if echo x > /data/written 2>/dev/null; then echo WROTE; else echo REFUSED; fi; grep " /data " /proc/mounts';
    const pod = await runVmPod(t, ns, 'nfs-reader', {
      restartPolicy: 'Never',
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', script], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', nfs: { server: '127.0.0.1', path: EXPORT_DIR, readOnly: true } }],
    }, { until: succeeded });
    const log = await logOf(ns, pod);
    assert.match(log, /seeded-on-server/, `the server's file is read:\n${log}`);
    assert.match(log, /REFUSED/, `a write is refused:\n${log}`);
    assert.match(log, /127\.0\.0\.1:\/srv\/kts-nfs \/data nfs4? ro,/, `mounted read-only:\n${log}`);
    assert.equal((await t.ssh(`test -e ${EXPORT_DIR}/written && echo yes || echo no`)).stdout.trim(), 'no', 'nothing written on the server');
    await deleteVmPod(t, ns, 'nfs-reader');
    await waitFor('no nfs mount of the pod left in the guest', async () => (await nfsMountsOf(pod.metadata!.uid!)) === '', 60_000, 1000);
  });

  it('the server goes away: the kubelet still answers and starts pods, and the pod on the dead export is deleted and its mount taken off', async function () {
    this.timeout(900_000);
    const ns = await suite.namespace('vm-nfs-gone');
    // hard (mount.nfs's default): every call on the mount waits for the server, for ever.
    await boundNfsClaim(ns, 'gone', ['nfsvers=4.2', 'hard', 'timeo=10', 'retrans=1']);
    // It wrote a file and reads it every 100 ms, so the server goes with the pod's calls on the
    // mount in flight. Not writes: a buffered write to a hard mount whose server is gone can
    // wait in the kernel unkillably (folio_wait_bit_common, seen here 2026-11-30), and then no
    // kubelet can stop the container (SIGKILL waits with it) until the server is back. A read
    // waits in the RPC layer, which SIGKILL ends.
    const holder = await runVmPod(t, ns, 'nfs-holder', {
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', 'seq 1 1000 > /data/gone.log; while true; do cat /data/gone.log > /dev/null; sleep 0.1; done'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'gone' } }],
    });
    // The server goes as a host that is gone does: its packets are dropped (a stopped nfsd
    // would refuse connections, which the client sees at once). Every call on the hard mount
    // now waits for it.
    await t.ssh(`iptables -I INPUT -p tcp --dport 2049 -j DROP`);
    try {
      await serverGone(ns, holder);
    } finally {
      await t.ssh(`iptables -D INPUT -p tcp --dport 2049 -j DROP`, { allowFailure: true }).catch(() => {});
    }
  });

  async function serverGone(ns: string, holder: V1Pod): Promise<void> {
    const t0 = performance.now();

    // /stats/summary (the volume's statfs is one of its reads) answers, again and again.
    const pki = join(t.cp.dir, 'pki');
    const creds = { cert: await readFile(join(pki, 'apiserver-kubelet-client.crt')), key: await readFile(join(pki, 'apiserver-kubelet-client.key')) };
    for (let i = 0; i < 6; i++) {
      const r = await kubeletRequest(t.kubeletPort, '/stats/summary', { ...creds, timeoutMs: 60_000 });
      assert.equal(r.status, 200, `summary ${i} with the server gone: ${r.body.slice(0, 300)}`);
    }
    // Another pod still starts (its volumes, logs and status go through the same file system calls).
    await runVmPod(t, ns, 'after-server-gone', {
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sleep', '3600'] }],
      volumes: [{ name: 'scratch', emptyDir: {} }],
    });
    console.log(`      (summaries and a new pod ${((performance.now() - t0) / 1000).toFixed(0)} s after the server went)`);

    // The pod on the dead export is deleted. Its umount (`umount -c`, the path as the mount table
    // names it) returns here in seconds (kernel 6.12); one that waited for the server would be
    // killed after unmountTimeoutSeconds (60) and forced (`umount -f`, test/unit/mount-table.test.ts).
    const t1 = performance.now();
    await t.core.deleteNamespacedPod({ name: 'nfs-holder', namespace: ns, gracePeriodSeconds: 1 });
    await waitFor(`pod ${ns}/nfs-holder gone`, async () => (await t.core.readNamespacedPod({ name: 'nfs-holder', namespace: ns }).then(() => false, () => true)), 240_000, 2000);
    await waitFor('no nfs mount of the pod left in the guest', async () => (await nfsMountsOf(holder.metadata!.uid!)) === '', 60_000, 1000);
    console.log(`      (the pod on the dead export gone in ${((performance.now() - t1) / 1000).toFixed(0)} s)`);
    await deleteVmPod(t, ns, 'after-server-gone');
  }
});
