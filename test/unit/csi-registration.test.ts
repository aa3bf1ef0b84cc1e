import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../../core/logger.ts';
import { withTimeout } from '../../core/util/with-timeout.ts';
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
  // Bounded at 5 s: the pure lane runs at nice 10 beside the node lanes, where a rescan every 100 ms can lag.
  const until = async (check: () => boolean, what: string) => {
    for (let i = 0; i < 100 && !check(); i++) await sleep(50);
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
    // What the driver was told, in order, rather than the watcher's state right after start():
    // a first scan slower than rescanMs (a stalled test process) has the retry inside start()'s
    // coalesced scan, so the driver may already be registered when start() returns.
    // The driver is registered before it is told (upstream's order): wait for both.
    await until(() => !!watcher.driver('flaky.csi.test') && d.registrationStatuses.length >= 2, 'registered on retry, and told');
    assert.equal(d.registrationStatuses.length, 2, JSON.stringify(d.registrationStatuses));
    assert.equal(d.registrationStatuses[0]!.pluginRegistered, false);
    assert.match(d.registrationStatuses[0]!.error, /NodeGetInfo: rpc error: code = Internal desc = injected NodeGetInfo failure/);
    assert.deepEqual(d.registrationStatuses[1], { pluginRegistered: true, error: '' });
    assert.equal(d.count('NodeGetInfo'), 2);
  });

  it('a registration socket that accepts but never answers holds neither the start, nor other drivers, nor the stop', async function () {
    // As a driver pod frozen at a kubelet restart leaves it: connections are accepted, nothing is said.
    const held: net.Socket[] = [];
    const silent = net.createServer((c) => void held.push(c));
    await fs.mkdir(registry, { recursive: true });
    await new Promise<void>((resolve) => silent.listen(path.join(registry, 'frozen.csi.test-reg.sock'), resolve));
    try {
      const early = driver('early.csi.test');
      await early.start();
      // callTimeoutSeconds' default: registration calls must not take that long.
      const w = new RegistrationWatcher({ dir: registry, logger: silentLogger(), timeoutMs: 120_000, rescanMs: 100, startWaitMs: 1000 });
      try {
        // The core's deadline helper, which also clears its timer when the call ends first.
        const bound = <T>(p: Promise<T>, ms: number, what: string) =>
          withTimeout(p, ms, { error: () => new assert.AssertionError({ message: `${what} did not finish within ${ms} ms` }) });
        await bound(w.start(), 8000, 'start');
        assert.equal(w.driver('early.csi.test')?.nodeId, 'fake-node-1');
        assert.ok(held.length >= 1, 'the silent socket was dialled');
        const late = driver('late.csi.test');
        await late.start();
        await until(() => !!w.driver('late.csi.test') && late.registrationStatuses.length >= 1, 'a driver that appears later registers, and is told, while the silent one is still asked');
        assert.deepEqual(late.registrationStatuses, [{ pluginRegistered: true, error: '' }]);
        assert.equal(w.list().length, 2);
        await bound(w.stop(), 5000, 'stop');
      } finally {
        await w.stop();
      }
    } finally {
      for (const c of held) c.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
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
