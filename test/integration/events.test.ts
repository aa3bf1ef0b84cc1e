import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeletEvent } from '../../core/events/event-recorder.ts';
import { eventsCommand } from '../../core/commands/events.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { freePort } from '../../tools/node-env/util.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

/**
 * A pod's story as events, on real containerd in standalone mode: the reasons and wording
 * upstream's kubelet records, in the local view (`/debug/events`, `kubelet-ts events`).
 */
describe('events: a pod tells its story (standalone)', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let t: TestKubelet;
  let dir: string;

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-events-'));
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ['probes', { jitter: false }]],
      config: { readOnlyPort: await freePort(), nodeName: 'events-node', crashLoopBackOff: { initialMs: 1000, maxMs: 2000 } },
      dir,
    });
  });

  after(async function () {
    if (t) await t.dispose();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  const of = (name: string) => t.kubelet.events.list().filter((e) => e.involvedObject.name === `${name}-events-node`);
  const reasons = (name: string) => of(name).map((e) => e.reason);

  async function run(args: string[]): Promise<string> {
    const out = new PassThrough();
    let text = '';
    out.on('data', (d) => (text += d));
    const code = await eventsCommand(args, { socketPath: t.kubelet.mainServer!.socketPath!, stdout: out, stderr: out });
    assert.equal(code, 0, text);
    return text;
  }

  it('records Starting for the node, then Pulling, Pulled, Created, Started, Killing for a pod, as upstream words them', async function () {
    assert.ok(t.kubelet.events.list().some((e) => e.reason === 'Starting' && e.involvedObject.kind === 'Node' && e.message === 'Starting kubelet.'));
    await t.writeManifest('story.json', podManifest('story', [{ name: 'app', image: env.images.busybox, imagePullPolicy: 'Always', command: ['sleep', '3600'] }], { hostNetwork: true, terminationGracePeriodSeconds: 0 }, { namespace: 'ev' }));
    await t.waitForPod('story', isRunning, 60_000, 'Running');
    await t.removeManifest('story.json');
    await t.waitForPod('story', (p) => p === undefined, 60_000, 'removed');
    assert.deepEqual(reasons('story'), ['Pulling', 'Pulled', 'Created', 'Started', 'Killing']);
    const byReason = new Map(of('story').map((e) => [e.reason, e]));
    assert.equal(byReason.get('Pulling')!.message, `Pulling image "${env.images.busybox}"`);
    assert.match(byReason.get('Pulled')!.message, new RegExp(`^Successfully pulled image "${env.images.busybox.replace(/[.]/g, '\\.')}" in [\\d.]+m?s \\([\\d.]+m?s including waiting\\)\\. Image size: \\d+ bytes\\.$`));
    assert.equal(byReason.get('Created')!.message, 'Created container app');
    assert.equal(byReason.get('Started')!.message, 'Started container app');
    assert.equal(byReason.get('Killing')!.message, 'Stopping container app');
    for (const e of of('story')) {
      assert.equal(e.namespace, 'ev');
      assert.equal(e.involvedObject.fieldPath, 'spec.containers{app}');
      assert.deepEqual(e.source, { component: 'kubelet', host: 'events-node' });
    }
    const table = await run(['-n', 'ev']);
    const lines = table.trim().split('\n');
    assert.match(lines[0]!, /^NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    assert.deepEqual(lines.slice(1).map((l) => l.split(/\s{3,}/)[3]), ['Pulling', 'Pulled', 'Created', 'Started', 'Killing'], 'newest last');
    assert.match(lines.at(-1)!, /pod\/story-events-node\s+Stopping container app$/);
  });

  it('records BackOff for a crash loop (counted, not repeated) and Unhealthy for a failing probe; -w follows new events', async function () {
    const out = new PassThrough();
    let followed = '';
    out.on('data', (d) => (followed += d));
    const req = eventsCommand(['-w', '-n', 'ev2'], { socketPath: t.kubelet.mainServer!.socketPath!, stdout: out, stderr: out });
    await t.writeManifest('bad.json', podManifest('bad', [
      { name: 'crash', image: env.images.busybox, command: ['sh', '-c', 'exit 3'] },
      { name: 'sick', image: env.images.busybox, command: ['sleep', '3600'], livenessProbe: { exec: { command: ['false'] }, periodSeconds: 1, failureThreshold: 100 } },
    ], { hostNetwork: true, terminationGracePeriodSeconds: 0 }, { namespace: 'ev2' }));
    const deadline = Date.now() + 60_000;
    const find = (reason: string, container: string) => of('bad').find((e) => e.reason === reason && e.involvedObject.fieldPath === `spec.containers{${container}}`);
    let backoff: KubeletEvent | undefined;
    while (!(backoff = find('BackOff', 'crash')) || backoff.count < 2 || !find('Unhealthy', 'sick')) {
      assert.ok(Date.now() < deadline, `events so far: ${JSON.stringify(of('bad').map((e) => [e.reason, e.count]))}`);
      await sleep(250);
    }
    assert.equal(backoff.type, 'Warning');
    assert.match(backoff.message, /^Back-off restarting failed container crash in pod bad-events-node_ev2\(/);
    assert.equal(of('bad').filter((e) => e.reason === 'BackOff').length, 1, 'one event, counted');
    assert.equal(find('Unhealthy', 'sick')!.message, 'Liveness probe failed: ');
    await t.removeManifest('bad.json');
    await t.waitForPod('bad', (p) => p === undefined, 60_000, 'removed');
    await sleep(300);
    assert.match(followed, /^NAMESPACE\s+LAST SEEN/);
    assert.match(followed, /BackOff\s+pod\/bad-events-node\s+Back-off restarting failed container crash/);
    assert.match(followed, /Unhealthy\s+pod\/bad-events-node\s+Liveness probe failed/);
    // The follow ends when the kubelet's server goes away (dispose stops it); do not wait for that here.
    void req;
  });
  it("retries a volume that cannot be set up with upstream's back-off (500 ms doubling): FailedMount counted a few times, not every second; the pod starts once it can", async function () {
    this.timeout(90_000);
    const missing = path.join(dir, 'made-later');
    await t.writeManifest('late.json', podManifest('late', [{ name: 'app', image: env.images.busybox, command: ['sleep', '3600'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }], { hostNetwork: true, terminationGracePeriodSeconds: 0, volumes: [{ name: 'data', hostPath: { path: missing, type: 'Directory' } }] }, { namespace: 'ev3' }));
    const failedMount = () => of('late').find((e) => e.reason === 'FailedMount');
    for (let i = 0; i < 100 && !failedMount(); i++) await sleep(100);
    assert.ok(failedMount(), 'a FailedMount event');
    await sleep(9000);
    // Tries at about 0, 0.5, 1.5, 3.5 and 7.5 s: 5 in the 9 s (a retry every second would be 10).
    const tries = failedMount()!.count;
    assert.ok(tries >= 3 && tries <= 6, `FailedMount counted ${tries} times in ~9 s`);
    assert.match(failedMount()!.message, /made-later/);
    await fs.mkdir(missing);
    // The next try, about 16 s after the first, finds it.
    await t.waitForPod('late', isRunning, 45_000, 'Running once its hostPath exists');
    await t.removeManifest('late.json');
    await t.waitForPod('late', (p) => p === undefined, 60_000, 'removed');
  });
});
