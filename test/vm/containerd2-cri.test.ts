import assert from 'node:assert/strict';
import { nodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';

/**
 * What a CRI client sees of containerd 2.x that differs from 1.6/1.7 (plugins/cri-containerd
 * README): the sandbox image, the runtime's own config, image pulls through a hosts.toml mirror.
 */
describe('node VM: containerd 2.1 through the cri-containerd plugin', function () {
  this.timeout(600_000);
  let t: TestNodeVm;

  before(async function () {
    this.timeout(1_200_000);
    t = await nodeVmOrSkip(this);
    await t.configureContainerd({ systemdCgroup: true });
  });

  it("the sandbox image is the one containerd's config pins (what image GC must keep)", async function () {
    assert.equal(await t.cri.sandboxImage(), t.env.images.pause);
  });

  it('pulls from the host registry through the hosts.toml of config_path; image status and list agree', async function () {
    const ref = await t.cri.pullImage(t.env.images.busybox);
    assert.match(ref, /^sha256:[0-9a-f]{64}$/);
    const st = await t.cri.imageStatus(t.env.images.busybox);
    assert.ok(st?.repoTags.includes(t.env.images.busybox), JSON.stringify(st));
    assert.ok((await t.cri.listImages()).some((i) => i.id === st!.id));
  });

  it('runtime handlers: runc with user namespace support', async function () {
    const handlers = await t.cri.runtimeHandlers();
    const runc = handlers.find((h) => h.name === 'runc') ?? handlers.find((h) => h.name === '');
    assert.ok(runc, JSON.stringify(handlers));
    assert.equal(runc.userNamespaces, true);
  });
});
