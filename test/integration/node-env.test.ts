import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { loadCriPackage, type CriServiceClient } from '../../plugins/cri-containerd/proto-loader.ts';
import { startNodeEnv, type NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';

/**
 * Proves the real node environment works with real components only: images built from
 * busybox are in our registry, containerd pulls them (ctr and CRI), runs a pod on the
 * bridge network with our pause image, and stop() leaves nothing on the host.
 */

type Call = (method: string, req: object) => Promise<any>;

function criClients(endpoint: string): { runtime: Call; image: Call; close(): void } {
  const pkg = loadCriPackage();
  const creds = grpc.credentials.createInsecure();
  const rt = new pkg.RuntimeService(endpoint, creds) as CriServiceClient;
  const im = new pkg.ImageService(endpoint, creds) as CriServiceClient;
  const call =
    (client: CriServiceClient): Call =>
    (method, req) =>
      new Promise((resolve, reject) => {
        client[method](req, { deadline: Date.now() + 20_000 }, (err: Error | null, res: unknown) =>
          err ? reject(new Error(`CRI ${method}: ${err.message}`)) : resolve(res),
        );
      });
  return { runtime: call(rt), image: call(im), close: () => (rt.close(), im.close()) };
}

/** Runs a one-container busybox pod serving `body` over HTTP on port 8080; returns ids and IP. */
async function runHttpPod(cri: ReturnType<typeof criClients>, env: NodeEnv, name: string, body: string, logDir: string) {
  await cri.image('PullImage', { image: { image: env.images.busybox } });
  const sandboxConfig = {
    metadata: { name, uid: randomUUID(), namespace: 'node-env-test', attempt: 0 },
    hostname: name,
    logDirectory: logDir,
    linux: {},
  };
  const { podSandboxId } = await cri.runtime('RunPodSandbox', { config: sandboxConfig });
  const { containerId } = await cri.runtime('CreateContainer', {
    podSandboxId,
    sandboxConfig,
    config: {
      metadata: { name: 'web', attempt: 0 },
      image: { image: env.images.busybox },
      command: ['sh', '-c', `echo ${body} > /tmp/index.html && exec httpd -f -p 8080 -h /tmp`],
      logPath: 'web/0.log',
    },
  });
  await cri.runtime('StartContainer', { containerId });
  const status = await cri.runtime('PodSandboxStatus', { podSandboxId, verbose: true });
  const ip: string = status.status.network.ip;
  const info = JSON.parse(status.info.info) as { runtimeSpec: { linux: { namespaces: Array<{ type: string; path?: string }> } } };
  const netns = info.runtimeSpec.linux.namespaces.find((n) => n.type === 'network')?.path ?? '';
  return { podSandboxId, containerId, ip, netns, status };
}

/** GETs http://ip:8080/ with a bounded number of attempts (the pod may still be starting). */
async function fetchFromPod(ip: string): Promise<string> {
  let lastErr: unknown;
  for (let i = 0; i < 40; i++) {
    try {
      const res = await fetch(`http://${ip}:8080/index.html`, { signal: AbortSignal.timeout(1000) });
      return (await res.text()).trim();
    } catch (err) {
      lastErr = err;
      await sleep(100);
    }
  }
  throw new Error(`pod at ${ip} did not answer: ${(lastErr as Error)?.message}`);
}

function ipInSubnet(ip: string, subnet: string): boolean {
  const [net, bits] = subnet.split('/');
  const toInt = (s: string) => s.split('.').reduce((a, o) => (a << 8) + Number(o), 0) >>> 0;
  const mask = bits === '0' ? 0 : (~0 << (32 - Number(bits))) >>> 0;
  return ((toInt(ip) & mask) >>> 0) === ((toInt(net!) & mask) >>> 0);
}

async function processesWithArg(arg: string): Promise<number[]> {
  const pids: number[] = [];
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const cmd = await readFile(`/proc/${e}/cmdline`, 'utf8').catch(() => '');
    if (cmd.split('\0').includes(arg)) pids.push(Number(e));
  }
  return pids;
}

async function ipRouteFor(subnet: string): Promise<string> {
  const { execFile } = await import('node:child_process');
  return new Promise((resolve, reject) =>
    execFile('ip', ['-4', 'route', 'show', subnet], (err, stdout) => (err ? reject(err) : resolve(stdout.trim()))),
  );
}

async function mountsUnder(dir: string): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  return info
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((mp) => mp === dir || mp.startsWith(dir + '/'));
}

describe('node environment (real containerd, registry, CNI)', function () {
  this.timeout(120_000);

  it('pulls the busybox image from our registry with ctr', async function () {
    const env = await nodeEnvOrSkip(this);
    assert.match(env.images.busybox, /^127\.0\.0\.1:\d+\/kubelet-ts\/busybox:1\.35$/);
    assert.match(env.images.pause, /^127\.0\.0\.1:\d+\/kubelet-ts\/pause:1$/);
    await env.ctr(['images', 'pull', '--plain-http', env.images.busybox]);
    const refs = (await env.ctr(['images', 'ls', '-q'])).split('\n');
    assert.ok(refs.includes(env.images.busybox), `images: ${refs.join(', ')}`);
  });

  it('answers CRI Version and runs a pod on the bridge network', async function () {
    const env = await nodeEnvOrSkip(this);
    const cri = criClients(env.containerdEndpoint);
    const logDir = await mkdtemp(join(tmpdir(), 'kts-node-env-pod-'));
    let podSandboxId: string | undefined;
    try {
      const version = await cri.runtime('Version', { version: 'v1' });
      assert.equal(version.runtimeName, 'containerd');
      assert.equal(version.runtimeApiVersion, 'v1');

      const pod = await runHttpPod(cri, env, `web-${process.pid}`, 'hello-from-pod', logDir);
      podSandboxId = pod.podSandboxId;
      assert.equal(pod.status.status.state, 'SANDBOX_READY');
      assert.ok(env.network, 'a bridge network was written');
      assert.ok(ipInSubnet(pod.ip, env.network.subnet), `pod IP ${pod.ip} in ${env.network.subnet}`);
      assert.ok(pod.netns.startsWith(env.containerd.stateDir), `netns ${pod.netns} under the state dir`);
      assert.equal(await fetchFromPod(pod.ip), 'hello-from-pod');

      const { status } = await cri.runtime('ContainerStatus', { containerId: pod.containerId });
      assert.equal(status.state, 'CONTAINER_RUNNING');
      assert.equal(status.imageRef.startsWith('sha256:') || status.imageRef.includes('@sha256:'), true);

      await cri.runtime('StopPodSandbox', { podSandboxId });
      await cri.runtime('RemovePodSandbox', { podSandboxId });
      podSandboxId = undefined;
      assert.equal(existsSync(pod.netns), false, 'netns removed with the sandbox');
    } finally {
      if (podSandboxId) {
        await cri.runtime('StopPodSandbox', { podSandboxId }).catch(() => {});
        await cri.runtime('RemovePodSandbox', { podSandboxId }).catch(() => {});
      }
      cri.close();
      await rm(logDir, { recursive: true, force: true });
    }
  });

  it('stop() removes leaked pods, shims, mounts, netns and the bridge', async () => {
    // A dedicated environment (its own containerd, registry and bridge slot), so stopping
    // it does not disturb the shared one.
    const baseDir = await mkdtemp(join(tmpdir(), 'kts-ne-'));
    const env = await startNodeEnv({ baseDir });
    const cri = criClients(env.containerdEndpoint);
    let stopped = false;
    try {
      assert.ok(env.network);
      const pod = await runHttpPod(cri, env, 'leaky', 'leaked', join(baseDir, 'logs'));
      assert.equal(await fetchFromPod(pod.ip), 'leaked');
      cri.close();
      assert.ok((await processesWithArg(env.containerdSocket)).length >= 2, 'containerd and a shim run');
      assert.ok(existsSync(`/sys/class/net/${env.network.bridge}`), 'bridge exists');

      await env.stop(); // without stopping the pod first
      await env.stop(); // idempotent
      stopped = true;

      assert.deepEqual(await processesWithArg(env.containerdSocket), [], 'no containerd or shim left');
      assert.deepEqual(await mountsUnder(baseDir), [], 'no mounts left');
      assert.equal(existsSync(pod.netns), false, 'netns gone');
      assert.equal(existsSync(`/sys/class/net/${env.network.bridge}`), false, 'bridge gone');
      // (No request to the old pod IP here: with the bridge gone it would leave the machine.)
      assert.equal(await ipRouteFor(env.network.subnet), '', 'no route to the pod subnet left');
    } finally {
      cri.close();
      if (!stopped) await env.stop().catch(() => {});
      await rm(baseDir, { recursive: true, force: true });
    }
  });
});
