/**
 * Issue 17, item 3, on real containerd: "a large image shows its progress". A two-layer image
 * (busybox and 40 MB of random data, which no compression shrinks) is pushed to the run's
 * registry and pulled through a loopback proxy that passes 6 MB/s, so the pull takes seconds.
 * While it pulls, cri-containerd's pullProgress, the pod's waiting message on /pods and the
 * explain row show bytes done growing against a total; after it, the Pulled event has the
 * size and the duration, and the explain row says what was pulled. A pod removed while its
 * image is pulled stops the pull: the download stops and the image never arrives.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import { pullProgressOfMessage } from '../../core/runtime/pull-progress-format.ts';
import { renderWaterfall } from '../../core/timeline/waterfall.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { run } from '../../tools/node-env/util.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

const RANDOM_BYTES = 40 * 1024 * 1024;
const BYTES_PER_SECOND = 6 * 1024 * 1024;

/** A Docker archive of the busybox image with a second layer of random data; returns its path. */
async function buildLargeImage(env: NodeEnv, dir: string, name: string): Promise<string> {
  const archive = path.join(dir, 'archive');
  await fs.mkdir(archive);
  await run('tar', ['-xf', env.imageTarballs.busybox.tarPath, '-C', archive]);
  const rootfs = path.join(dir, 'rootfs');
  await fs.mkdir(path.join(rootfs, 'data'), { recursive: true });
  const fh = await fs.open(path.join(rootfs, 'data', 'random.bin'), 'w');
  for (let left = RANDOM_BYTES; left > 0; left -= 1 << 20) await fh.write(randomBytes(Math.min(left, 1 << 20)));
  await fh.close();
  const layerTmp = path.join(dir, 'layer.tar');
  await run('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '-cf', layerTmp, '-C', rootfs, '.'], { timeoutMs: 60_000 });
  const layerHex = createHash('sha256').update(await fs.readFile(layerTmp)).digest('hex');
  await fs.mkdir(path.join(archive, layerHex));
  await fs.rename(layerTmp, path.join(archive, layerHex, 'layer.tar'));
  const [entry] = JSON.parse(await fs.readFile(path.join(archive, 'manifest.json'), 'utf8')) as Array<{ Config: string; Layers: string[] }>;
  const config = JSON.parse(await fs.readFile(path.join(archive, entry!.Config), 'utf8'));
  config.rootfs.diff_ids.push(`sha256:${layerHex}`);
  const configJson = JSON.stringify(config);
  const configHex = createHash('sha256').update(configJson).digest('hex');
  await fs.rm(path.join(archive, entry!.Config));
  await fs.writeFile(path.join(archive, `${configHex}.json`), configJson);
  await fs.writeFile(path.join(archive, 'manifest.json'), JSON.stringify([{ Config: `${configHex}.json`, RepoTags: [name], Layers: [...entry!.Layers, `${layerHex}/layer.tar`] }]));
  const tarPath = path.join(dir, 'image.tar');
  await run('tar', ['-cf', tarPath, '-C', archive, '.'], { timeoutMs: 60_000 });
  await fs.rm(archive, { recursive: true, force: true });
  await fs.rm(rootfs, { recursive: true, force: true });
  return tarPath;
}

/** `45.1 / 300 MB (15%)` → bytes done and total (from the decimal units the message uses). */
function figures(message: string): { done: number; total: number } | undefined {
  const m = /: ([\d.]+) \/ ([\d.]+) (B|kB|MB|GB) \(\d+%\)/.exec(message);
  if (!m) return undefined;
  const unit = { B: 1, kB: 1e3, MB: 1e6, GB: 1e9 }[m[3] as 'B' | 'kB' | 'MB' | 'GB'];
  return { done: Number(m[1]) * unit, total: Number(m[2]) * unit };
}

describe('pull progress: a large image shows its progress (real containerd)', function () {
  this.timeout(240_000);
  let env: NodeEnv;
  let dir: string;
  let proxy: TcpProxy | undefined;
  let t: TestKubelet | undefined;
  let cri: CriRuntime | undefined;
  let image = '';
  let cancelImage = '';

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pp-pull-progress-'));
    const tag = `t${Date.now().toString(36)}`;
    const tarPath = await buildLargeImage(env, dir, `pp/big:${tag}`);
    await env.registryServer.pushImage(tarPath, `${env.registry}/pp/big:${tag}`);
    await fs.rm(tarPath, { force: true });
    const [host, port] = env.registry.split(':');
    proxy = await startTcpProxy({ host: host!, port: Number(port) }, { bytesPerSecond: BYTES_PER_SECOND });
    // containerd pulls from 127.0.0.1:PORT over plain HTTP without configuration.
    image = `127.0.0.1:${proxy.port}/pp/big:${tag}`;
    cri = new CriRuntime(new CriClient(env.containerdEndpoint), { requestTimeoutMs: 10_000, pullTimeoutMs: 120_000 });
    t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]], config: { nodeName: 'pp-node' }, dir: path.join(dir, 'kubelet') });
  });

  after(async function () {
    if (t) {
      for (const name of ['pp-big', 'pp-cancel']) {
        await t.removeManifest(`${name}.json`).catch(() => {});
        await t.waitForPod(name, (p) => p === undefined, 60_000, 'removed').catch(() => {});
      }
      await t.dispose();
    }
    if (cri && image) await cri.removeImage(image).catch(() => {});
    if (cri && cancelImage) await cri.removeImage(cancelImage).catch(() => {});
    await cri?.close();
    await proxy?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('shows bytes done growing against a total while it pulls, in cri-containerd, the pod status and explain; then the Pulled event with size and duration', async function () {
    const kubelet = t!.kubelet;
    await t!.writeManifest('pp-big.json', podManifest('pp-big', [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }], { hostNetwork: true, terminationGracePeriodSeconds: 0 }, { namespace: 'pp' }));
    const served = (): V1Pod | undefined => ((kubelet.podList() as { items: V1Pod[] }).items).find((p) => p.metadata?.name === 'pp-big-pp-node');

    const messages: string[] = [];
    const runtimeOffsets: Array<{ offset: number; total: number }> = [];
    const explainRows: Array<{ done: number; total: number }> = [];
    let waterfallWhilePulling = '';
    const deadline = Date.now() + 120_000;
    // Bounded: until the pod runs, at most 120 s and 600 looks.
    for (let i = 0; i < 600 && Date.now() < deadline; i++) {
      const pod = served();
      if (isRunning(pod)) break;
      const waiting = pod?.status?.containerStatuses?.[0]?.state?.waiting;
      if (waiting?.message && pullProgressOfMessage(waiting.message)) {
        assert.equal(waiting.reason, 'ContainerCreating', 'STATUS stays what kubectl shows');
        messages.push(waiting.message);
      }
      const layer = (await cri!.pullProgress()).find((d) => d.ref.startsWith('layer-') && d.totalBytes > 30e6);
      if (layer) runtimeOffsets.push({ offset: layer.offsetBytes, total: layer.totalBytes });
      const uid = pod?.metadata?.uid;
      const step = uid ? kubelet.timelines.get(uid)?.steps.find((s) => s.step === 'image' && s.running) : undefined;
      if (step?.progress && step.progress.totalBytes > 0) {
        explainRows.push({ done: step.progress.doneBytes, total: step.progress.totalBytes });
        waterfallWhilePulling = renderWaterfall(kubelet.timelines.get(uid!)!);
      }
      await sleep(300);
    }
    await t!.waitForPod('pp-big', isRunning, 60_000, 'Running');

    // cri-containerd: the big layer's download, its offset growing towards its size.
    assert.ok(runtimeOffsets.length >= 3, `containerd's content service showed the download (${runtimeOffsets.length} looks)`);
    assert.ok(runtimeOffsets.every((r) => r.total === runtimeOffsets[0]!.total && r.offset <= r.total));
    assert.ok(runtimeOffsets[runtimeOffsets.length - 1]!.offset > runtimeOffsets[0]!.offset, JSON.stringify(runtimeOffsets));

    // The pod's waiting message: bytes done growing against a total, with a rate.
    const withFigures = messages.map(figures).filter((f): f is { done: number; total: number } => f !== undefined);
    assert.ok(withFigures.length >= 3, `progress in the waiting message:\n${messages.join('\n')}`);
    assert.ok(withFigures.every((f) => f.total >= 40e6 && f.total < 50e6), `a total of the image's size:\n${messages.join('\n')}`);
    assert.ok(withFigures[withFigures.length - 1]!.done > withFigures[0]!.done, messages.join('\n'));
    assert.ok(messages.some((m) => /, [\d.]+ MB\/s$/.test(m)), `a rate:\n${messages.join('\n')}`);

    // explain: the running image row with its progress.
    assert.ok(explainRows.length >= 3 && explainRows[explainRows.length - 1]!.done > explainRows[0]!.done, JSON.stringify(explainRows));
    assert.match(waterfallWhilePulling, /image \(app: 127\.0\.0\.1:\d+\/pp\/big:\w+\) .*\|  pulling: [\d.]+ \/ [\d.]+ MB \(\d+%\)/);

    // After it: the Pulled event as upstream writes it, and the explain row of the finished pull.
    const pulled = kubelet.events.list().find((e) => e.reason === 'Pulled' && e.involvedObject.name === 'pp-big-pp-node');
    assert.ok(pulled, 'a Pulled event');
    const m = /^Successfully pulled image "(.*)" in ((?:\d+m)?[\d.]+s) \(((?:\d+m)?[\d.]+s) including waiting\)\. Image size: (\d+) bytes\.$/.exec(pulled.message);
    assert.ok(m, pulled.message);
    assert.equal(m[1], image);
    assert.ok(Number(m[4]) > 40e6, `the size: ${m[4]}`);
    assert.ok(Number.parseFloat(m[2]!) >= 3 || m[2]!.includes('m'), `it took seconds: ${m[2]}`);
    const uid = served()!.metadata!.uid!;
    const after = renderWaterfall(kubelet.timelines.get(uid)!);
    assert.match(after, /image \(app: 127\.0\.0\.1:\d+\/pp\/big:\w+\) .*\|  pulled [\d.]+ MB in [\d.]+s, [\d.]+ MB\/s$/m);
    assert.equal(kubelet.timelines.get(uid)!.steps.filter((s) => s.running).length, 0);
    // What the user saw, for a reader of the test log (KUBELET_TS_TEST_LOG=1).
    if (process.env.KUBELET_TS_TEST_LOG) process.stderr.write(`      while pulling:\n${waterfallWhilePulling.replace(/^/gm, '        ')}      messages: ${messages.slice(0, 3).join(' | ')}\n`);
  });

  it('a pod removed while its image is pulled: the pull stops and the image never arrives', async function () {
    // Another image of its own random data (the first test's layers are on the node now).
    const tag = `c${Date.now().toString(36)}`;
    const tarPath = await buildLargeImage(env, dir, `pp/cancel:${tag}`);
    await env.registryServer.pushImage(tarPath, `${env.registry}/pp/cancel:${tag}`);
    await fs.rm(tarPath, { force: true });
    cancelImage = `127.0.0.1:${proxy!.port}/pp/cancel:${tag}`;
    await t!.writeManifest('pp-cancel.json', podManifest('pp-cancel', [{ name: 'app', image: cancelImage, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }], { hostNetwork: true, terminationGracePeriodSeconds: 0 }, { namespace: 'pp' }));
    const bigLayer = async () => (await cri!.pullProgress()).find((d) => d.ref.startsWith('layer-') && d.totalBytes > 30e6);
    let started: { offsetBytes: number; totalBytes: number } | undefined;
    // Bounded: until a few MB of the big layer are in, at most 60 s and 300 looks.
    for (let i = 0; i < 300 && !(started && started.offsetBytes > 4e6); i++) {
      await sleep(200);
      started = await bigLayer();
    }
    assert.ok(started && started.offsetBytes < started.totalBytes, `the big layer was downloading (${JSON.stringify(started)})`);
    await t!.removeManifest('pp-cancel.json');
    await t!.waitForPod('pp-cancel', (p) => p === undefined, 30_000, 'removed');
    // At 6 MB/s the whole layer takes ~7 s: ten seconds on, a pull that went on would be done.
    await sleep(10_000);
    const first = await bigLayer();
    await sleep(2000);
    const second = await bigLayer();
    assert.ok(!second || second.offsetBytes === first?.offsetBytes, `the download stopped growing (${JSON.stringify({ started, first, second })})`);
    assert.ok(!second || second.offsetBytes < second.totalBytes, 'the layer was not completed');
    assert.equal(await cri!.imageStatus(cancelImage), null, 'the image never arrived on the node');
    const pod = t!.kubelet.events.list().filter((e) => e.involvedObject.name === 'pp-cancel-pp-node').map((e) => e.reason);
    assert.ok(pod.includes('Pulling') && !pod.includes('Pulled') && !pod.includes('Failed'), `events: ${pod.join(', ')}`);
  });
});
