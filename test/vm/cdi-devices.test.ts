import assert from 'node:assert/strict';
import { clusterSuite } from '../support/cluster-suite.ts';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';
import { deleteVmPod, runVmPod } from '../support/node-vm-pods.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A device provider that answers with CDI device names (upstream's DevicePluginCDIDevices): the
 * kubelet hands the names to the runtime as CRI `CDI_devices`, and containerd 2.1 (CDI on by
 * default) resolves them from the spec in /etc/cdi into the container's edits. The device node
 * and the env var below are written only in the CDI spec: the kubelet never sees them, so a
 * container that has them got them from the runtime's CDI resolution of the name it was given.
 */
const RESOURCE = 'example.com/cdi-dev';
const PLUGIN_FILE = '/etc/kubelet-ts/cdi-test-device.mjs';
const SPEC_FILE = '/etc/cdi/kubelet-ts-test.yaml';
const DEVICE_NODE = '/dev/kts-cdi0';

/** A plain-JS plugin (no imports: the guest's /etc has no node_modules) registering one device whose allocation is a CDI name. */
const PLUGIN = `export default {
  name: 'cdi-test-device',
  apply(ctx) {
    const registration = ctx.devices().register({
      resourceName: '${RESOURCE}',
      async allocate(ids) { return { cdiDevices: ids.map((id) => '${RESOURCE}=' + id) }; },
    });
    registration.update([{ id: 'dev0', health: 'Healthy' }]);
  },
};
`;

const CDI_SPEC = `cdiVersion: "0.6.0"
kind: "${RESOURCE}"
devices:
  - name: dev0
    containerEdits:
      env: ["KTS_CDI_DEVICE=dev0"]
      deviceNodes:
        - path: ${DEVICE_NODE}
`;

/** The default bundle (kubelet.config.ts) and the test's device plugin. */
const PLUGINS = [['cri-containerd', { pullTimeoutSeconds: 600 }], ['probes'], ['csi-grpc'], ['nfs'], ['iscsi'], ['flexvolume'], ['eviction-default'], ['credential-provider-exec'], ['device-plugins'], ['pod-resources'], [PLUGIN_FILE]];

describe('node VM: CDI devices from a device provider, resolved by containerd 2.1', function () {
  this.timeout(600_000);
  const suite = clusterSuite('kts-vm-cdi-');
  let t: TestNodeVm;

  before(async function () {
    this.timeout(1_200_000);
    t = await systemdNodeVmOrSkip(this, false);
    await t.ssh(`mkdir -p /etc/cdi && rm -f ${DEVICE_NODE} && mknod -m 666 ${DEVICE_NODE} c 1 3`);
    await t.vm.writeFile(SPEC_FILE, CDI_SPEC);
    await t.vm.writeFile(PLUGIN_FILE, PLUGIN);
    await t.startKubelet({ cgroupDriver: 'systemd', pluginsConfig: { plugins: PLUGINS } });
  });

  after(async function () {
    if (!t) return;
    await t.ssh(`rm -f ${SPEC_FILE} ${PLUGIN_FILE} ${DEVICE_NODE}`).catch(() => {});
  });

  it("a container given the device gets the spec's device node and env from the runtime; one without it gets neither", async function () {
    const ns = await suite.namespace('vm-cdi');
    const show = `echo "env=[$KTS_CDI_DEVICE]"; if [ -c ${DEVICE_NODE} ]; then echo node=char; else echo node=none; fi; sleep 3600`;
    const withDevice = await runVmPod(t, ns, 'with-device', {
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', show], resources: { limits: { [RESOURCE]: '1' } } }],
    });
    const without = await runVmPod(t, ns, 'without-device', {
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', show] }],
    });
    // The lines are written at the container's start; its Running status may come first.
    const logOf = (name: string, uid: string) =>
      waitFor(`the log of ${name}`, async () => {
        const r = await t.ssh(`cat /var/log/pods/${ns}_${name}_${uid}/c/0.log`, { allowFailure: true });
        return r.stdout.includes('node=') ? r.stdout : undefined;
      }, 60_000, 1000);
    const withLog = await logOf('with-device', withDevice.metadata!.uid!);
    assert.match(withLog, /env=\[dev0\]/, `the CDI spec's env in the container given ${RESOURCE}=dev0:\n${withLog}`);
    assert.match(withLog, /node=char/, `the CDI spec's device node in it:\n${withLog}`);
    const withoutLog = await logOf('without-device', without.metadata!.uid!);
    assert.match(withoutLog, /env=\[\]/, `no CDI edits in a container without the device:\n${withoutLog}`);
    assert.match(withoutLog, /node=none/);
    const node = await t.core.readNode({ name: t.nodeName });
    assert.equal(node.status?.allocatable?.[RESOURCE], '1', 'the provider\'s device in the Node\'s allocatable');
    await deleteVmPod(t, ns, 'with-device');
    await deleteVmPod(t, ns, 'without-device');
  });
});
