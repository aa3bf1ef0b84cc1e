import assert from 'node:assert/strict';
import { clusterSuite } from '../support/cluster-suite.ts';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';
import { containerPid, deleteVmPod, runVmPod } from '../support/node-vm-pods.ts';

/**
 * `hostUsers: false` on containerd 2.1 + runc 1.3 + kernel 6.12 (idmapped mounts): the pod runs
 * in a user namespace of its own, its root mapped to an unprivileged range of 65536 ids on the
 * node, as upstream's kubelet allocates them (at or above 65536 * 2, in blocks of 65536).
 */
describe('node VM: user namespaces (hostUsers: false)', function () {
  this.timeout(600_000);
  const suite = clusterSuite('kts-vm-userns-');
  let t: TestNodeVm;

  before(async function () {
    this.timeout(1_200_000);
    t = await systemdNodeVmOrSkip(this);
  });

  it("a hostUsers: false pod's container has uid_map '0 <N >= 131072> 65536', a host-users pod the identity", async function () {
    const ns = await suite.namespace('vm-userns');
    const pod = await runVmPod(t, ns, 'userns', { hostUsers: false, containers: [{ name: 'c', image: t.env.images.busybox, command: ['sleep', '3600'] }] });
    const { pid } = await containerPid(t, pod);
    const map = (await t.ssh(`cat /proc/${pid}/uid_map`)).stdout.trim().split(/\s+/).map(Number);
    assert.equal(map.length, 3, `one line of uid_map: ${map.join(' ')}`);
    assert.equal(map[0], 0);
    assert.ok(map[1]! >= 131072 && map[1]! % 65536 === 0, `host id ${map[1]} at or above 131072, a multiple of 65536`);
    assert.equal(map[2], 65536);
    assert.deepEqual((await t.ssh(`cat /proc/${pid}/gid_map`)).stdout.trim().split(/\s+/).map(Number), map);
    // Inside, the process is root; outside it is the mapped id.
    assert.equal((await t.ssh(`awk '/^Uid:/ {print $2}' /proc/${pid}/status`)).stdout.trim(), String(map[1]));
    await deleteVmPod(t, ns, 'userns');

    const host = await runVmPod(t, ns, 'hostusers', { containers: [{ name: 'c', image: t.env.images.busybox, command: ['sleep', '3600'] }] });
    const h = await containerPid(t, host);
    assert.deepEqual((await t.ssh(`cat /proc/${h.pid}/uid_map`)).stdout.trim().split(/\s+/).map(Number), [0, 0, 4294967295]);
    await deleteVmPod(t, ns, 'hostusers');
  });
});
