import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CniError } from '../../plugins/cni-exec/cni/errors.ts';
import { CniRuntime } from '../../plugins/cni-exec/cni/runtime.ts';
import { loadNetwork, parseNetworkConfig } from '../../plugins/cni-exec/cni/config.ts';
import { convertResult, negotiateVersion } from '../../plugins/cni-exec/cni/version.ts';
import type { RuntimeConf } from '../../plugins/cni-exec/cni/types.ts';

const FAKE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fakes', 'cni', 'fake-plugin');

interface Call { seq: number; command: string; tag: string; stdin: Record<string, any>; env: Record<string, string> }

/** A temp dir with a bin dir of fake plugins (links to test/fakes/cni/fake-plugin), a conf dir, a log dir and a cache dir. */
async function fixture(names = ['fake-a', 'fake-b', 'fake-c', 'fake-v04', 'fake-v02']) {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cni-unit-'));
  const bin = path.join(dir, 'bin');
  const conf = path.join(dir, 'net.d');
  const logs = path.join(dir, 'log');
  for (const d of [bin, conf, logs]) await fs.mkdir(d);
  for (const n of names) await fs.symlink(FAKE, path.join(bin, n));
  const calls = async (): Promise<Call[]> => {
    const files = (await fs.readdir(logs)).filter((f) => f.endsWith('.json')).sort();
    return Promise.all(files.map(async (f) => {
      const [seq, command, ...tag] = f.replace(/\.json$/, '').split('-');
      const env = Object.fromEntries((await fs.readFile(path.join(logs, f.replace(/\.json$/, '.env')), 'utf8')).trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      return { seq: Number(seq), command: command!, tag: tag.join('-'), stdin: JSON.parse(await fs.readFile(path.join(logs, f), 'utf8')), env };
    }));
  };
  const writeList = async (file: string, list: object) => fs.writeFile(path.join(conf, file), JSON.stringify(list));
  const plugin = (type: string, tag: string, extra: object = {}) => ({ type, fakeTag: tag, fakeLogDir: logs, ...extra });
  const runtime = (timeoutMs = 5000) => new CniRuntime({ confDir: conf, binDirs: [path.join(dir, 'nothing-here'), bin], cacheDir: path.join(dir, 'cache'), execTimeoutMs: timeoutMs });
  return { dir, bin, conf, logs, calls, writeList, plugin, runtime, cleanup: () => fs.rm(dir, { recursive: true, force: true }) };
}

const rt = (id = 'sandbox1', capabilityArgs: Record<string, unknown> = {}): RuntimeConf => ({
  containerId: id,
  netns: `/var/run/netns/cni-${id}`,
  ifName: 'eth0',
  args: [['IgnoreUnknown', '1'], ['K8S_POD_NAMESPACE', 'ns'], ['K8S_POD_NAME', 'p'], ['K8S_POD_INFRA_CONTAINER_ID', id]],
  capabilityArgs,
});

/** Calls other than VERSION (VERSION is asked once per binary and cached). */
const ops = (calls: Call[]) => calls.filter((c) => c.command !== 'VERSION').map((c) => `${c.command} ${c.tag}`);

describe('cni-exec: CNI runtime against fake plugins', function () {
  this.timeout(20_000);
  let f: Awaited<ReturnType<typeof fixture>>;
  beforeEach(async () => {
    f = await fixture();
  });
  afterEach(async () => {
    await f.cleanup();
  });

  describe('configuration', () => {
    it('uses the first file by name; a .conf is a list of one', async () => {
      await f.writeList('20-second.conflist', { cniVersion: '1.0.0', name: 'second', plugins: [f.plugin('fake-a', 'a')] });
      await f.writeList('10-first.conf', { cniVersion: '0.4.0', name: 'first', type: 'fake-b', fakeTag: 'b' });
      await fs.writeFile(path.join(f.conf, '05-ignored.txt'), 'not a config');
      const net = await loadNetwork(f.conf);
      assert.equal(net.name, 'first');
      assert.deepEqual(net.plugins, [{ type: 'fake-b', fakeTag: 'b' }]);
      assert.equal((await loadNetwork(f.conf, { name: 'second' })).name, 'second');
    });

    it('rejects malformed configs with the file and the field named', async () => {
      assert.throws(() => parseNetworkConfig('{"cniVersion": "1.0.0", "name": "x", "plugins": [', '/etc/x.conflist'), /\/etc\/x\.conflist: not valid JSON/);
      assert.throws(() => parseNetworkConfig('{"cniVersion": "1.0.0", "plugins": []}', 'a.conflist'), /a\.conflist: 'name' is missing/);
      assert.throws(() => parseNetworkConfig('{"cniVersion": "1.0.0", "name": "x", "plugins": []}', 'a.conflist'), /network "x": 'plugins' is empty/);
      assert.throws(() => parseNetworkConfig('{"cniVersion": "1.0.0", "name": "x", "plugins": [{"ipam": {}}]}', 'a.conflist'), /plugins\[0\]\.type is missing/);
      assert.throws(() => parseNetworkConfig('{"cniVersion": "1.0.0", "name": "x", "plugins": [{"type": "../../bin/sh"}]}', 'a.conflist'), /must be a plain executable name/);
      assert.throws(() => parseNetworkConfig('{"name": "x", "plugins": [{"type": "a"}]}', 'a.conflist'), /'cniVersion' is undefined/);
      await assert.rejects(loadNetwork(path.join(f.dir, 'missing')), /no network config found in .*missing/);
      const err = await f.runtime().add(rt()).catch((e) => e);
      assert.ok(err instanceof CniError);
      assert.equal(err.code, 7);
    });

    it('a malformed first file fails the ADD (it is not skipped for the next one)', async () => {
      await fs.writeFile(path.join(f.conf, '10-broken.conflist'), '{ nope');
      await f.writeList('20-good.conflist', { cniVersion: '1.0.0', name: 'good', plugins: [f.plugin('fake-a', 'a')] });
      await assert.rejects(f.runtime().add(rt()), /10-broken\.conflist: not valid JSON/);
      assert.deepEqual(ops(await f.calls()), []);
    });
  });

  describe('ADD, DEL and CHECK', () => {
    it('runs ADD in order with prevResult, the CNI_* environment and runtimeConfig for declared capabilities only', async () => {
      await f.writeList('10-net.conflist', {
        cniVersion: '1.0.0',
        name: 'podnet',
        plugins: [
          f.plugin('fake-a', 'a', { fakeAddress: '10.99.0.7/24' }),
          f.plugin('fake-b', 'b', { capabilities: { portMappings: true }, fakeAddress: '10.99.0.8/24' }),
          f.plugin('fake-c', 'c', { capabilities: { bandwidth: true, portMappings: false }, fakeAddress: '10.99.0.9/24' }),
        ],
      });
      const caps = { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }], bandwidth: { ingressRate: 1000000, ingressBurst: 4294967295 } };
      const { network, result } = await f.runtime().add(rt('sb1', caps));
      assert.equal(network.name, 'podnet');
      assert.deepEqual(ops(await f.calls()), ['ADD a', 'ADD b', 'ADD c']);
      const [a, b, c] = (await f.calls()).filter((x) => x.command === 'ADD');
      // Name and version come from the list; the first plugin has no prevResult.
      assert.equal(a!.stdin.name, 'podnet');
      assert.equal(a!.stdin.cniVersion, '1.0.0');
      assert.equal(a!.stdin.prevResult, undefined);
      assert.equal(a!.stdin.runtimeConfig, undefined, 'no capabilities declared, no runtimeConfig');
      assert.deepEqual(b!.stdin.prevResult.ips, [{ address: '10.99.0.7/24', gateway: '10.99.0.1', interface: 0 }]);
      assert.equal(b!.stdin.prevResult.fakeTag, 'a', 'unknown result fields reach the next plugin');
      assert.deepEqual(b!.stdin.runtimeConfig, { portMappings: caps.portMappings });
      assert.deepEqual(c!.stdin.runtimeConfig, { bandwidth: caps.bandwidth });
      assert.equal(c!.stdin.prevResult.fakeTag, 'b');
      assert.deepEqual(a!.env, {
        CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'sb1', CNI_NETNS: '/var/run/netns/cni-sb1', CNI_IFNAME: 'eth0',
        CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=sb1',
        CNI_PATH: `${path.join(f.dir, 'nothing-here')}:${f.bin}`, PID: a!.env.PID!,
      });
      // The final result is the last plugin's, in the network's version.
      assert.equal(result.cniVersion, '1.0.0');
      assert.equal(result.fakeTag, 'c');
      assert.deepEqual(result.ips, [{ address: '10.99.0.9/24', gateway: '10.99.0.1', interface: 0 }]);
    });

    it('DEL runs in reverse order with the cached prevResult, and is idempotent', async () => {
      await f.writeList('10-net.conflist', { cniVersion: '1.0.0', name: 'podnet', plugins: [f.plugin('fake-a', 'a'), f.plugin('fake-b', 'b')] });
      const r = f.runtime();
      await r.add(rt('sb2'));
      assert.ok(await r.cache.get('sb2', 'eth0'), 'cached after ADD');
      const { entry } = await r.del({ containerId: 'sb2', ifName: 'eth0', netns: '' });
      assert.equal(entry?.state, 'added');
      assert.deepEqual(ops(await f.calls()), ['ADD a', 'ADD b', 'DEL b', 'DEL a']);
      const dels = (await f.calls()).filter((c) => c.command === 'DEL');
      assert.equal(dels[0]!.stdin.prevResult.fakeTag, 'b');
      assert.equal(dels[0]!.env.CNI_NETNS, '', 'DEL works without a netns');
      assert.equal(await r.cache.get('sb2', 'eth0'), undefined, 'cache entry removed');
      // A second DEL (containerd calls DEL on stop and again on remove) does nothing and succeeds.
      assert.deepEqual(await r.del({ containerId: 'sb2', ifName: 'eth0', netns: '' }), { entry: undefined });
      assert.deepEqual(ops(await f.calls()), ['ADD a', 'ADD b', 'DEL b', 'DEL a']);
    });

    it('DEL after a restart uses the cached config, even with the config dir changed or empty', async () => {
      await f.writeList('10-net.conflist', { cniVersion: '1.0.0', name: 'podnet', plugins: [f.plugin('fake-a', 'a'), f.plugin('fake-b', 'b', { capabilities: { portMappings: true } })] });
      const caps = { portMappings: [{ hostPort: 9090, containerPort: 90, protocol: 'udp' }] };
      await f.runtime().add(rt('sb3', caps));
      await fs.rm(path.join(f.conf, '10-net.conflist'));
      const fresh = f.runtime(); // a new process: nothing in memory
      await fresh.del({ containerId: 'sb3', ifName: 'eth0', netns: '' });
      const dels = (await f.calls()).filter((c) => c.command === 'DEL');
      assert.deepEqual(dels.map((d) => d.tag), ['b', 'a']);
      assert.deepEqual(dels[0]!.stdin.runtimeConfig, caps, 'the capabilities of the ADD are given again (portmap removes its rules by them)');
      assert.equal(dels[0]!.env.CNI_ARGS, 'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=sb3');
      assert.deepEqual(await fresh.cache.list(), []);
    });

    it('CHECK runs each plugin with the cached result; refused before 0.4.0', async () => {
      await f.writeList('10-net.conflist', { cniVersion: '1.0.0', name: 'podnet', plugins: [f.plugin('fake-a', 'a'), f.plugin('fake-b', 'b')] });
      const r = f.runtime();
      await r.add(rt('sb4'));
      await r.check({ containerId: 'sb4', ifName: 'eth0', netns: '/var/run/netns/cni-sb4' });
      const checks = (await f.calls()).filter((c) => c.command === 'CHECK');
      assert.deepEqual(checks.map((c) => c.tag), ['a', 'b']);
      assert.equal(checks[1]!.stdin.prevResult.fakeTag, 'b');
      await assert.rejects(r.check({ containerId: 'unknown', ifName: 'eth0', netns: '' }), (e: CniError) => e.code === 3);

      await fs.rm(path.join(f.conf, '10-net.conflist'));
      await f.writeList('10-old.conflist', { cniVersion: '0.3.1', name: 'oldnet', plugins: [f.plugin('fake-a', 'a')] });
      await r.add(rt('sb5'));
      await assert.rejects(r.check({ containerId: 'sb5', ifName: 'eth0', netns: '' }), /configuration version 0\.3\.1 does not support the CHECK command/);
    });
  });

  describe('version negotiation', () => {
    it('speaks 0.4.0 to a plugin that does not support the list version, converting prevResult and its result', async () => {
      await f.writeList('10-net.conflist', { cniVersion: '1.0.0', name: 'mixed', plugins: [f.plugin('fake-a', 'a'), f.plugin('fake-v04', 'old'), f.plugin('fake-b', 'b')] });
      const r = f.runtime();
      const { result } = await r.add(rt('sb6'));
      const [a, old, b] = (await f.calls()).filter((c) => c.command === 'ADD');
      assert.equal(a!.stdin.cniVersion, '1.0.0');
      assert.equal(old!.stdin.cniVersion, '0.4.0');
      assert.deepEqual(old!.stdin.prevResult.ips, [{ address: '10.99.0.2/24', gateway: '10.99.0.1', interface: 0, version: '4' }]);
      assert.equal(old!.stdin.prevResult.cniVersion, '0.4.0');
      // The 0.4.0 plugin's result (with "version": "4") reaches the next plugin as 1.0.0.
      assert.equal(b!.stdin.prevResult.cniVersion, '1.0.0');
      assert.deepEqual(b!.stdin.prevResult.ips, [{ address: '10.99.0.2/24', gateway: '10.99.0.1', interface: 0 }]);
      assert.equal(result.cniVersion, '1.0.0');
      assert.deepEqual((await r.versions()).map((v) => [v.plugin, v.negotiated]), [['fake-a', '1.0.0'], ['fake-v04', '0.4.0'], ['fake-b', '1.0.0']]);
    });

    it('refuses a plugin with no version in common (code 1), naming network and plugin', async () => {
      await f.writeList('10-net.conflist', { cniVersion: '1.0.0', name: 'mixed', plugins: [f.plugin('fake-a', 'a'), f.plugin('fake-v02', 'ancient')] });
      const r = f.runtime();
      const err: CniError = await r.add(rt('sb8')).catch((e) => e);
      assert.equal(err.code, 1);
      assert.match(err.message, /^network "mixed" plugin "fake-v02" \(VERSION\): incompatible CNI versions: the network asks for 1\.0\.0, the plugin supports 0\.1\.0, 0\.2\.0$/);
      // fake-a ran and was torn down again: nothing stays allocated or cached.
      assert.deepEqual(ops(await f.calls()), ['ADD a', 'DEL a']);
      assert.deepEqual(await r.cache.list(), []);
    });

    it('converts results between versions as libcni does', () => {
      const v1 = { cniVersion: '1.0.0', ips: [{ address: '10.0.0.2/24', interface: 0 }, { address: 'fd00::2/64', interface: 0 }], extra: 1 };
      assert.deepEqual(convertResult(v1, '0.4.0').ips, [{ address: '10.0.0.2/24', interface: 0, version: '4' }, { address: 'fd00::2/64', interface: 0, version: '6' }]);
      assert.deepEqual(convertResult(convertResult(v1, '0.3.1'), '1.0.0'), v1);
      assert.deepEqual(convertResult({ cniVersion: '0.2.0', ip4: { ip: '10.1.0.5/16', gateway: '10.1.0.1', routes: [{ dst: '0.0.0.0/0' }] } }, '1.0.0'),
        { cniVersion: '1.0.0', ips: [{ address: '10.1.0.5/16', gateway: '10.1.0.1' }], routes: [{ dst: '0.0.0.0/0' }] });
      assert.equal(negotiateVersion('0.4.0', ['0.3.0', '0.3.1', '0.4.0', '1.0.0'], { network: 'n', plugin: 'p' }), '0.4.0');
      assert.equal(negotiateVersion('1.0.0', ['0.3.1'], { network: 'n', plugin: 'p' }), '0.3.1');
    });
  });

  describe('bad plugins', () => {
    const twoPlugins = (second: object) => f.writeList('10-net.conflist', { cniVersion: '1.0.0', name: 'podnet', plugins: [f.plugin('fake-a', 'a'), second] });

    it('a plugin error is a CniError with its code, msg and details, naming network and plugin; the chain is rolled back', async () => {
      await twoPlugins(f.plugin('fake-b', 'b', { fakeMode: 'fail' }));
      const r = f.runtime();
      const err: CniError = await r.add(rt('bad1')).catch((e) => e);
      assert.ok(err instanceof CniError);
      assert.deepEqual([err.code, err.msg, err.details, err.network, err.plugin], [7, 'fake failure', 'field fakeMode says fail', 'podnet', 'fake-b']);
      assert.equal(err.message, 'network "podnet" plugin "fake-b" (ADD): fake failure: field fakeMode says fail');
      assert.deepEqual(err.toJSON('1.0.0'), { cniVersion: '1.0.0', code: 7, msg: 'network "podnet" plugin "fake-b" (ADD): fake failure', details: 'field fakeMode says fail' });
      assert.deepEqual(ops(await f.calls()), ['ADD a', 'ADD b', 'DEL b', 'DEL a']);
      assert.deepEqual(await r.cache.list(), []);
    });

    it('a missing plugin binary names the network, the plugin and the path; what ran is torn down', async () => {
      await twoPlugins({ type: 'no-such-plugin' });
      const r = f.runtime();
      const err: CniError = await r.add(rt('bad2')).catch((e) => e);
      assert.equal(err.message, `network "podnet" plugin "no-such-plugin" (ADD): failed to find plugin "no-such-plugin" in path [${path.join(f.dir, 'nothing-here')} ${f.bin}]`);
      assert.deepEqual(ops(await f.calls()), ['ADD a', 'DEL a']);
      assert.deepEqual(await r.cache.list(), []);
    });

    it('a plugin printing garbage, or exiting without an error object, is reported with what it printed', async () => {
      await twoPlugins(f.plugin('fake-b', 'b', { fakeMode: 'garbage' }));
      const r = f.runtime();
      await assert.rejects(r.add(rt('bad3')), { message: 'network "podnet" plugin "fake-b" (ADD): printed something that is not a CNI result: this is not JSON at all' });
      assert.deepEqual(await r.cache.list(), []);
      await f.writeList('10-net.conflist', { cniVersion: '1.0.0', name: 'podnet', plugins: [f.plugin('fake-c', 'c', { fakeMode: 'silent-exit' })] });
      await assert.rejects(r.add(rt('bad4')), { message: 'network "podnet" plugin "fake-c" (ADD): exited with code 3 and printed no CNI error object: something broke' });
    });

    it('a hanging plugin is killed after the bounded wait', async function () {
      this.timeout(40_000);
      await twoPlugins(f.plugin('fake-b', 'b', { fakeMode: 'hang-add' }));
      // The wait bounds every call, the rollback's DELs too: 3 s, so that a healthy fake plugin
      // (a shell script forking a dozen greps before it logs its call) is never cut short on a
      // busy lane, as an 800 ms wait once cut the rollback's `DEL a`.
      const r = f.runtime(3000);
      const t0 = Date.now();
      const err: CniError = await r.add(rt('bad5')).catch((e) => e);
      const took = Date.now() - t0;
      assert.equal(err.message, 'network "podnet" plugin "fake-b" (ADD): did not answer within 3000 ms and was killed');
      assert.equal(err.code, 11);
      // Bounded, not the hang's 60 s: the 3 s wait plus the ADDs and DELs of the fake plugins,
      // which took 3.7 s over an 800 ms wait on a busy CI lane.
      assert.ok(took < 20_000, `took ${took} ms`);
      const hung = (await f.calls()).find((c) => c.command === 'ADD' && c.tag === 'b')!;
      let alive = true;
      try {
        process.kill(Number(hung.env.PID), 0);
      } catch {
        alive = false;
      }
      assert.equal(alive, false, 'the hanging plugin process is gone');
      assert.deepEqual(ops(await f.calls()), ['ADD a', 'ADD b', 'DEL b', 'DEL a']);
      assert.deepEqual(await r.cache.list(), []);
    });

    it('a DEL that fails keeps the cache entry so a retry tears down again', async () => {
      await f.writeList('10-net.conflist', { cniVersion: '1.0.0', name: 'podnet', plugins: [f.plugin('fake-a', 'a', { fakeMode: 'fail-del' })] });
      const r = f.runtime();
      await r.add(rt('bad6'));
      await assert.rejects(r.del({ containerId: 'bad6', ifName: 'eth0', netns: '' }), /network "podnet" plugin "fake-a" \(DEL\): fake DEL failure/);
      assert.equal((await r.cache.list()).length, 1);
    });

    it('garbage collection tears down attachments of containers that are gone', async () => {
      await f.writeList('10-net.conflist', { cniVersion: '1.0.0', name: 'podnet', plugins: [f.plugin('fake-a', 'a')] });
      const r = f.runtime();
      await r.add(rt('live'));
      await r.add(rt('gone'));
      const { removed } = await r.gc((id) => id === 'live', 0);
      assert.deepEqual(removed, ['gone']);
      assert.deepEqual((await r.cache.list()).map((e) => e.containerId), ['live']);
    });
  });
});
