import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';
import { deleteVmPod, runVmPod } from '../support/node-vm-pods.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * iscsi volumes and PersistentVolumes (plugins/iscsi, in the default bundle) on the node VM:
 * the guest's kernel iSCSI target (LIO, set up with Debian's targetcli-fb) serves a blank
 * file-backed LUN on its own loopback, and kubelet-ts logs in with open-iscsi, formats the LUN
 * and mounts it as upstream's in-tree plugin does. The host has no iSCSI in its kernel.
 */
const DIR = '/srv/kts-iscsi';
const IQN = 'iqn.2026-11.io.kubelet-ts:vm-test';
const BACKSTORE = 'kts_vm_lun0';
/** A second target that asks for CHAP. */
const CHAP_IQN = 'iqn.2026-11.io.kubelet-ts:vm-chap';
const CHAP_BACKSTORE = 'kts_vm_chap0';
const CHAP_USER = 'kts-node';
const CHAP_PASSWORD = 'kts-chap-secret-12';

describe('node VM: iscsi volumes logged in to and mounted by the default bundle\'s iscsi plugin', function () {
  this.timeout(600_000);
  const suite = clusterSuite('kts-vm-iscsi-');
  let t: TestNodeVm;

  const targetcli = (args: string) => t.ssh(`targetcli ${args}`);

  before(async function () {
    this.timeout(1_200_000);
    // The default bundle (kubelet.config.ts): no plugins config of the test's own.
    t = await systemdNodeVmOrSkip(this);
    await t.ssh(`targetcli /iscsi delete ${IQN} >/dev/null 2>&1; targetcli /backstores/fileio delete ${BACKSTORE} >/dev/null 2>&1; rm -rf ${DIR} && mkdir -p ${DIR} && truncate -s 64M ${DIR}/lun0.img`);
    await targetcli(`/backstores/fileio create name=${BACKSTORE} file_or_dev=${DIR}/lun0.img`);
    await targetcli(`/iscsi create ${IQN}`);
    await targetcli(`/iscsi/${IQN}/tpg1/luns create /backstores/fileio/${BACKSTORE}`);
    // Any initiator, no authentication: the guest's own initiator is the only one that can reach it.
    await targetcli(`/iscsi/${IQN}/tpg1 set attribute generate_node_acls=1 demo_mode_write_protect=0 authentication=0 cache_dynamic_acls=1`);
    await t.ssh(`targetcli /iscsi delete ${CHAP_IQN} >/dev/null 2>&1; targetcli /backstores/fileio delete ${CHAP_BACKSTORE} >/dev/null 2>&1; truncate -s 64M ${DIR}/chap0.img`);
    await targetcli(`/backstores/fileio create name=${CHAP_BACKSTORE} file_or_dev=${DIR}/chap0.img`);
    await targetcli(`/iscsi create ${CHAP_IQN}`);
    await targetcli(`/iscsi/${CHAP_IQN}/tpg1/luns create /backstores/fileio/${CHAP_BACKSTORE}`);
    await targetcli(`/iscsi/${CHAP_IQN}/tpg1 set attribute generate_node_acls=1 demo_mode_write_protect=0 authentication=1 cache_dynamic_acls=1`);
    await targetcli(`/iscsi/${CHAP_IQN}/tpg1 set auth userid=${CHAP_USER} password=${CHAP_PASSWORD}`);
    await t.ssh('systemctl start iscsid');
  });

  after(async function () {
    if (!t) return;
    for (const [iqn, store] of [[IQN, BACKSTORE], [CHAP_IQN, CHAP_BACKSTORE]]) {
      await t.ssh(`iscsiadm -m node -T ${iqn} --logout >/dev/null 2>&1; iscsiadm -m node -T ${iqn} -o delete >/dev/null 2>&1; targetcli /iscsi delete ${iqn}; targetcli /backstores/fileio delete ${store}`, { allowFailure: true }).catch(() => {});
    }
    await t.ssh(`rm -rf ${DIR}`, { allowFailure: true }).catch(() => {});
  });

  const finished = (p: V1Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
  const logOf = (ns: string, pod: V1Pod) => t.readFile(`/var/log/pods/${ns}_${pod.metadata!.name}_${pod.metadata!.uid}/c/0.log`);
  const sessions = async () => (await t.ssh('iscsiadm -m session 2>&1 || true')).stdout;
  const source = { targetPortal: '127.0.0.1', iqn: IQN, lun: 0, fsType: 'ext4' };

  it('a PersistentVolume: the blank LUN is formatted, written by a pod, and logged out of after it; an inline read-only volume of it reads that and cannot write', async function () {
    const ns = await suite.namespace('vm-iscsi');
    const pv = suite.uniqueName('pv-iscsi');
    await t.core.createPersistentVolume({
      body: {
        metadata: { name: pv },
        spec: { capacity: { storage: '64Mi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: '', claimRef: { namespace: ns, name: 'disk' }, iscsi: source },
      },
    });
    suite.onCleanup(() => t.core.deletePersistentVolume({ name: pv }));
    await t.core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: 'disk' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } }, volumeName: pv, storageClassName: '' } },
    });
    await waitFor(`PVC ${ns}/disk Bound`, async () => (await t.core.readNamespacedPersistentVolumeClaim({ name: 'disk', namespace: ns })).status?.phase === 'Bound', 60_000, 500);

    const writer = await runVmPod(t, ns, 'iscsi-writer', {
      restartPolicy: 'Never',
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', 'echo written-through-iscsi > /data/hello && sync && grep " /data " /proc/mounts'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'disk' } }],
    }, { until: finished, timeoutMs: 300_000 });
    const log = await logOf(ns, writer);
    assert.equal(writer.status?.phase, 'Succeeded', `the writer: ${JSON.stringify(writer.status?.containerStatuses)}\n${log}`);
    assert.match(log, / \/dev\/sd[a-z]+ \/data ext4 rw,/, `the container's /data is the LUN, formatted ext4:\n${log}`);
    await deleteVmPod(t, ns, 'iscsi-writer');
    await waitFor('the target logged out of once no pod uses it', async () => !(await sessions()).includes(IQN), 60_000, 1000);

    const script = 'cat /data/hello; if echo x > /data/other 2>/dev/null; then echo WROTE; else echo REFUSED; fi; grep " /data " /proc/mounts';
    const reader = await runVmPod(t, ns, 'iscsi-reader', {
      restartPolicy: 'Never',
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', script], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', iscsi: { ...source, readOnly: true } }],
    }, { until: finished, timeoutMs: 300_000 });
    const rlog = await logOf(ns, reader);
    assert.match(rlog, /written-through-iscsi/, `the first pod's file, read from the LUN again (formatted once):\n${rlog}`);
    assert.match(rlog, /REFUSED/, `a write is refused:\n${rlog}`);
    assert.match(rlog, / \/dev\/sd[a-z]+ \/data ext4 ro,/, `mounted read-only:\n${rlog}`);
    await deleteVmPod(t, ns, 'iscsi-reader');
    await waitFor('logged out again', async () => !(await sessions()).includes(IQN), 60_000, 1000);
    const left = (await t.ssh("grep -F 'kubernetes.io/iscsi' /proc/mounts || true")).stdout.trim();
    assert.equal(left, '', 'no per-node mount of the LUN left');
  });

  it('a target that asks for CHAP: refused without the right Secret\'s keys, logged in to with them (chapAuthSession); while logged in, a pod with other keys or none is not given the session', async function () {
    const ns = await suite.namespace('vm-iscsi-chap');
    const secret = (name: string, password: string) => t.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name }, type: 'kubernetes.io/iscsi-chap', stringData: { 'node.session.auth.username': CHAP_USER, 'node.session.auth.password': password } },
    });
    await secret('chap-wrong', 'not-the-password-1');
    await secret('chap', CHAP_PASSWORD);
    const chapSource = { targetPortal: '127.0.0.1:3260', iqn: CHAP_IQN, lun: 0, fsType: 'ext4' };
    const spec = (iscsi: object, script: string) => ({
      restartPolicy: 'Never' as const,
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', script], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', iscsi: { ...chapSource, ...iscsi } as never }],
    });
    const withSecret = (name: string) => ({ chapAuthSession: true, secretRef: { name } });
    const waitingMessage = (p: V1Pod) => p.status?.containerStatuses?.[0]?.state?.waiting?.message ?? '';

    // A wrong password: the login is refused, the pod waits with the reason, and its volume is never mounted.
    const refused = await runVmPod(t, ns, 'iscsi-chap-wrong', spec(withSecret('chap-wrong'), 'cat /data/f'), {
      until: (p) => /iscsiadm .*--login: [\s\S]*(authorization failure|Login failed|login failed)/i.test(waitingMessage(p)),
      timeoutMs: 300_000,
    });
    const message = refused.status!.containerStatuses![0]!.state!.waiting!.message!;
    assert.ok(!message.includes('not-the-password-1'), `the password is not shown: ${message}`);
    await deleteVmPod(t, ns, 'iscsi-chap-wrong');

    // The right keys: logged in; the pod holds the session while the next ones try.
    const holder = await runVmPod(t, ns, 'iscsi-chap', spec(withSecret('chap'), 'echo chap-ok > /data/f && sync && sleep 3600'), { timeoutMs: 300_000 });
    assert.equal(holder.status?.phase, 'Running');
    assert.ok((await sessions()).includes(CHAP_IQN), 'logged in to the CHAP target');

    // The node's live session is not given to a pod whose Secret holds other keys, nor to one without CHAP.
    for (const [name, iscsi, why] of [
      ['iscsi-chap-wrong-live', withSecret('chap-wrong'), /logged in to with other CHAP credentials than the volume's Secret holds \(node\.session\.auth\.password differ\): not given to this pod/],
      ['iscsi-chap-none-live', {}, /logged in to with CHAP, and this volume has no chapAuthSession: not given to this pod/],
    ] as const) {
      const p = await runVmPod(t, ns, name, spec(iscsi, 'cat /data/f'), { until: (q) => why.test(waitingMessage(q)) || q.status?.phase === 'Succeeded', timeoutMs: 120_000 });
      assert.notEqual(p.status?.phase, 'Succeeded', `${name} read the LUN through another pod's session`);
      assert.ok(!waitingMessage(p).includes(CHAP_PASSWORD) && !waitingMessage(p).includes('not-the-password-1'), `no password in ${waitingMessage(p)}`);
      await deleteVmPod(t, ns, name);
    }

    // A second pod with the right keys shares the session and reads what the first wrote.
    const reader = await runVmPod(t, ns, 'iscsi-chap-reader', spec(withSecret('chap'), 'cat /data/f'), { until: finished, timeoutMs: 300_000 });
    const log = await logOf(ns, reader);
    assert.equal(reader.status?.phase, 'Succeeded', `${JSON.stringify(reader.status?.containerStatuses)}\n${log}`);
    assert.match(log, /chap-ok/);
    await deleteVmPod(t, ns, 'iscsi-chap-reader');
    await deleteVmPod(t, ns, 'iscsi-chap');
    await waitFor('logged out of the CHAP target', async () => !(await sessions()).includes(CHAP_IQN), 60_000, 1000);
  });
});
