import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { driverOptions } from '../../plugins/flexvolume/driver-options.ts';
import { callDriver, driverExecutable, NotSupported } from '../../plugins/flexvolume/flex-driver.ts';

describe('flexvolume plugin: driver lookup, calls and options', function () {
  let dir: string;
  before(async () => { dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-flexunit-')); });
  after(async () => { await fs.rm(dir, { recursive: true, force: true }); });

  /** A driver program answering `answer` (and exiting `code`) to every call. */
  async function driver(name: string, answer: string, code = 0, mode = 0o755): Promise<string> {
    const exe = path.join(dir, name);
    await fs.writeFile(exe, `#!/bin/sh\nprintf '%s' '${answer}'\nexit ${code}\n`, { mode });
    return exe;
  }

  it('finds vendor/name at <dir>/vendor~name/name and name at <dir>/name/name, as upstream; refuses names that leave the dir', () => {
    assert.equal(driverExecutable('/plugins', 'example.com/nfs-ish'), '/plugins/example.com~nfs-ish/nfs-ish');
    assert.equal(driverExecutable('/plugins', 'cifs'), '/plugins/cifs/cifs');
    for (const bad of ['../x', 'a/../b', 'a/b/c', '', '-x', 'a/..', 'a b']) assert.throws(() => driverExecutable('/plugins', bad), /flexVolume.driver .* is not vendor\/name/, bad);
  });

  it('reads Success, Failure and Not supported as upstream; a non-JSON answer or a missing or non-executable program is an error naming it', async () => {
    assert.deepEqual(await callDriver(await driver('ok', '{"status":"Success","capabilities":{"attach":false}}'), 'init', [], { timeoutMs: 5000 }), { status: 'Success', capabilities: { attach: false } });
    await assert.rejects(callDriver(await driver('fail', '{"status":"Failure","message":"no such share"}', 1), 'mount', ['/x', '{}'], { timeoutMs: 5000 }), /FlexVolume driver .*fail mount failed, status: Failure, reason: no such share/);
    await assert.rejects(callDriver(await driver('ns', '{"status":"Not supported"}', 1), 'unmount', ['/x'], { timeoutMs: 5000 }), NotSupported);
    await assert.rejects(callDriver(await driver('garbage', 'mounted it, I think', 0), 'mount', [], { timeoutMs: 5000 }), /no JSON status in its output: "mounted it, I think"/);
    await assert.rejects(callDriver(path.join(dir, 'absent'), 'init', [], { timeoutMs: 5000 }), /FlexVolume driver .*absent is not installed/);
    await assert.rejects(callDriver(await driver('noexec', '{}', 0, 0o644), 'init', [], { timeoutMs: 5000 }), /is not executable/);
  });

  it('kills a driver that does not answer in time', async () => {
    const exe = path.join(dir, 'hang');
    await fs.writeFile(exe, '#!/bin/sh\nexec sleep 30\n', { mode: 0o755 });
    const t0 = Date.now();
    await assert.rejects(callDriver(exe, 'mount', [], { timeoutMs: 300 }), /no answer within 0 s, killed/);
    assert.ok(Date.now() - t0 < 5000);
  });

  it('gives the driver the pod\'s identity and the Secret as upstream keys them; refuses reserved option keys', () => {
    const pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u-1' }, spec: { containers: [], serviceAccountName: 'sa', securityContext: { fsGroup: 7 } } };
    const src = { source: { driver: 'v/d', fsType: 'ext4', options: { share: '//srv/x' } }, readOnly: true, pvOrVolumeName: 'pv-1', field: 'f' };
    assert.deepEqual(driverOptions(pod, src, { data: { user: 'dXNlcg==' } }), {
      share: '//srv/x', 'kubernetes.io/fsType': 'ext4', 'kubernetes.io/readwrite': 'ro', 'kubernetes.io/pvOrVolumeName': 'pv-1',
      'kubernetes.io/pod.name': 'p', 'kubernetes.io/pod.namespace': 'ns', 'kubernetes.io/pod.uid': 'u-1', 'kubernetes.io/serviceAccount.name': 'sa',
      'kubernetes.io/fsGroup': '7', 'kubernetes.io/secret/user': 'dXNlcg==',
    });
    assert.throws(() => driverOptions(pod, { ...src, source: { driver: 'v/d', options: { 'Kubernetes.io/pod.uid': 'other' } } }, undefined), /f.options: key "Kubernetes.io\/pod.uid" is reserved/);
  });
});
