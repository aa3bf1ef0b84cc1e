import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { silentLogger } from '../../core/logger.ts';
import { LABEL } from '../../core/runtime/labels.ts';
import type { ContainerConfig, PodSandboxConfig } from '../../core/runtime/types.ts';
import { StatsProvider } from '../../core/stats/stats-provider.ts';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import { FakeCriServer } from '../fakes/fake-cri-server.ts';

/** The CRI plugin's streaming and stats calls against the in-process fake CRI server: requests out, numbers back. */
describe('cri-containerd: streaming URLs and stats', function () {
  this.timeout(15_000);
  let dir: string;
  let fake: FakeCriServer;
  let rt: CriRuntime;
  let sandboxId: string;
  let containerId: string;

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cri-ss-'));
    fake = await FakeCriServer.start(path.join(dir, 'cri.sock'), { localImages: ['busybox:1.36'], streamingUrlBase: 'http://127.0.0.1:40404' });
    rt = new CriRuntime(new CriClient(fake.endpoint), { requestTimeoutMs: 5000, pullTimeoutMs: 5000 });
    const labels = { [LABEL.managed]: 'true', [LABEL.podUID]: 'u1', [LABEL.podName]: 'web', [LABEL.podNamespace]: 'default' };
    const sandbox = {
      metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 0 }, hostname: 'web', logDirectory: path.join(dir, 'logs'), portMappings: [],
      labels, annotations: {}, linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
    } as PodSandboxConfig;
    sandboxId = await rt.runPodSandbox(sandbox);
    const container = {
      metadata: { name: 'app', attempt: 0 }, image: { image: 'busybox:1.36' }, command: ['sleep'], args: ['1000'], workingDir: '', envs: [], mounts: [],
      labels: { ...labels, [LABEL.containerName]: 'app' }, annotations: {}, logPath: 'app/0.log', linux: { resources: {}, securityContext: {} },
    } as ContainerConfig;
    containerId = await rt.createContainer(sandboxId, container, sandbox);
    await rt.startContainer(containerId);
    fake.setContainerStats(containerId, { usageCoreNanoSeconds: 7e9, usageNanoCores: 0, workingSetBytes: 12345, writableLayerBytes: 678 });
  });
  after(async () => {
    await rt?.close();
    await fake?.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('Exec, Attach and PortForward return the streaming server\'s URLs with the session\'s options', async () => {
    const exec = await rt.exec({ containerId, cmd: ['sh', '-c', 'id'], stdin: true, stdout: true, stderr: false, tty: true });
    assert.match(exec, /^http:\/\/127\.0\.0\.1:40404\/exec\/[0-9a-f]+$/);
    const req = fake.requestsOf('Exec').at(-1);
    assert.deepEqual([req.cmd, req.tty, req.stdin, req.stdout, req.stderr], [['sh', '-c', 'id'], true, true, true, false]);
    assert.match(await rt.attach({ containerId, stdin: false, stdout: true, stderr: true, tty: false }), /\/attach\//);
    assert.match(await rt.portForward(sandboxId, [8080]), /\/portforward\//);
    assert.deepEqual(fake.requestsOf('PortForward').at(-1).port, [8080]);
  });

  it('ListContainerStats, ListPodSandboxStats and ImageFsInfo come back as numbers', async () => {
    const [c] = await rt.listContainerStats({ labelSelector: { [LABEL.managed]: 'true' } });
    assert.equal(c!.id, containerId);
    assert.equal(c!.metadata.name, 'app');
    assert.equal(c!.cpu!.usageCoreNanoSeconds, 7e9);
    assert.equal(c!.memory!.workingSetBytes, 12345);
    assert.equal(c!.writableLayer!.usedBytes, 678);
    assert.ok(c!.cpu!.timestamp > 1e12, 'milliseconds since the epoch');
    const [s] = await rt.listPodSandboxStats();
    assert.equal(s!.metadata.uid, 'u1');
    assert.equal(s!.cpu!.usageCoreNanoSeconds, 7e9);
    assert.equal(s!.network!.defaultInterface!.name, 'eth0');
    assert.equal(s!.processCount, 2);
    const [f] = await rt.imageFsInfo();
    assert.equal(f!.mountpoint, '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs');
  });

  it('the stats service falls back to the containers when the runtime answers UNIMPLEMENTED', async () => {
    fake.failNext('ListPodSandboxStats', grpc.status.UNIMPLEMENTED, 'The server does not implement the method ListPodSandboxStats');
    const stats = new StatsProvider({ nodeName: 'n1', rootDir: dir, podLogsDir: path.join(dir, 'logs'), cgroups: undefined, runtime: () => rt, pods: () => [], logger: silentLogger() });
    const snap = await stats.snapshot();
    assert.deepEqual(snap.errors, []);
    const pod = snap.summary.pods.find((p) => p.podRef.uid === 'u1')!;
    assert.equal(pod.cpu!.usageCoreNanoSeconds, 7e9);
    assert.equal(pod.memory!.workingSetBytes, 12345);
    assert.equal(pod.containers[0]!.name, 'app');
  });
});
