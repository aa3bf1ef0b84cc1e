import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../../core/logger.ts';
import { RegistrationWatcher } from '../../plugins/csi-grpc/registration.ts';
import { FakeCsiDriver } from '../fakes/csi-hostpath-driver.ts';

/** csi-grpc's side of pluginregistration against the test driver's registration socket (real gRPC, no mounts). */
describe('csi-grpc plugin registration', function () {
  let dir: string;
  let registry: string;
  let watcher: RegistrationWatcher;
  const drivers: FakeCsiDriver[] = [];

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-csireg-'));
    registry = path.join(dir, 'plugins_registry');
    watcher = new RegistrationWatcher({ dir: registry, logger: silentLogger(), timeoutMs: 2000, rescanMs: 100 });
  });
  afterEach(async () => {
    await watcher.stop();
    for (const d of drivers.splice(0)) await d.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  const driver = (name: string, extra: Partial<ConstructorParameters<typeof FakeCsiDriver>[0]> = {}) => {
    const d = new FakeCsiDriver({ name, dir: path.join(dir, name), registryDir: registry, ...extra });
    drivers.push(d);
    return d;
  };
  const until = async (check: () => boolean, what: string) => {
    for (let i = 0; i < 50 && !check(); i++) await sleep(50);
    assert.ok(check(), what);
  };

  it('registers a CSI driver found at start and one that appears later, and tells each', async function () {
    const early = driver('early.csi.test');
    await early.start();
    await watcher.start();
    assert.equal(watcher.driver('early.csi.test')?.nodeId, 'fake-node-1');
    assert.deepEqual(early.registrationStatuses, [{ pluginRegistered: true, error: '' }]);
    const late = driver('late.csi.test');
    await late.start();
    await until(() => !!watcher.driver('late.csi.test'), 'late driver registered');
    assert.equal(late.count('NodeGetInfo'), 1);
  });

  it('refuses a plugin of another type or without a CSI 1.x version, saying why', async function () {
    const dev = driver('dev.example', { type: 'DevicePlugin' });
    const old = driver('old.csi.test', { versions: ['0.3.0'] });
    await dev.start();
    await old.start();
    await watcher.start();
    assert.equal(watcher.list().length, 0);
    assert.match(dev.registrationStatuses[0]!.error, /plugin type "DevicePlugin" is not handled/);
    assert.equal(dev.registrationStatuses[0]!.pluginRegistered, false);
    assert.match(old.registrationStatuses[0]!.error, /\["0.3.0"\] is a CSI version this kubelet speaks/);
  });

  it('refuses a driver whose NodeGetInfo fails, and registers it on a later scan once it works', async function () {
    const d = driver('flaky.csi.test');
    d.failNext('NodeGetInfo', 1);
    await d.start();
    await watcher.start();
    assert.equal(watcher.driver('flaky.csi.test'), undefined);
    assert.match(d.registrationStatuses[0]!.error, /NodeGetInfo: rpc error: code = Internal desc = injected NodeGetInfo failure/);
    await until(() => !!watcher.driver('flaky.csi.test'), 'registered on retry');
  });

  it('de-registers a driver when its registration socket goes', async function () {
    const d = driver('gone.csi.test');
    await d.start();
    await watcher.start();
    assert.ok(watcher.driver('gone.csi.test'));
    await d.stopRegistration();
    await until(() => !watcher.driver('gone.csi.test'), 'de-registered');
  });
});
