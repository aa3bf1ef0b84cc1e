import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { explainCommand } from '../../core/commands/explain.ts';
import type { PodStartTimeline } from '../../core/timeline/pod-timeline.ts';
import { freePort } from '../../tools/node-env/util.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { httpGet, socketGet } from '../support/http.ts';
import { podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

const get = (url: string, timeoutMs = 3000) => httpGet(url, timeoutMs);

/** The value of one Prometheus series in /metrics text (first match), or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

/**
 * What an operator sees of a pod start on containerd: /metrics with upstream names moving as
 * pods start (and the hook tap histogram naming the plugin), and the pod's start timeline on
 * /debug/pods/{ns}/{name}/timeline and as `kubelet-ts explain`.
 */
describe('metrics and pod start timeline on containerd', function () {
  this.timeout(60_000);
  let env: NodeEnv;
  let t: TestKubelet;
  let base: string;
  const ns = 'observability-test';

  before(async function () {
    env = await nodeEnvOrSkip(this);
    t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ['probes', { jitter: false }]], config: { readOnlyPort: await freePort() } });
    base = `http://127.0.0.1:${t.kubelet.readOnlyPort}`;
  });

  after(async () => {
    await t.dispose();
  });

  it('publishes upstream metrics that move when a pod starts, and tap durations per plugin', async () => {
    const before = await get(`${base}/metrics`);
    assert.equal(before.status, 200);
    assert.match(before.type, /text\/plain/);
    assert.equal(sample(before.body, 'kubelet_pod_start_duration_seconds_count') ?? 0, 0);

    await t.writeManifest('m.json', podManifest('m', [{
      name: 'main', image: env.images.busybox, command: ['sh', '-c', 'touch /tmp/ok; exec sleep 3600'],
      readinessProbe: { exec: { command: ['cat', '/tmp/ok'] }, periodSeconds: 1 },
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    await t.waitForPod('m', (p) => p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true, 30_000, 'Ready');
    // PLEG refreshes the running gauges on its next relist. A relist between the sandbox and
    // the container start counts the pod but no container yet: wait for both.
    let text = '';
    for (let i = 0; i < 30; i++) {
      text = (await get(`${base}/metrics`)).body;
      if ((sample(text, 'kubelet_running_pods') ?? 0) >= 1 && (sample(text, 'kubelet_running_containers', { container_state: 'running' }) ?? 0) >= 1) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(sample(text, 'kubelet_pod_start_duration_seconds_count'), 1);
    assert.ok(sample(text, 'kubelet_running_pods')! >= 1);
    assert.ok(sample(text, 'kubelet_running_containers', { container_state: 'running' })! >= 1);
    assert.ok(sample(text, 'kubelet_runtime_operations_total', { operation_type: 'run_podsandbox' })! >= 1);
    assert.ok(sample(text, 'kubelet_runtime_operations_duration_seconds_count', { operation_type: 'create_container' })! >= 1);
    assert.ok(sample(text, 'kubelet_pod_worker_duration_seconds_count', { operation_type: 'sync' })! >= 1);
    assert.ok(sample(text, 'kubelet_pleg_relist_duration_seconds_count')! >= 1);
    assert.ok(sample(text, 'kubelet_ts_hook_tap_duration_seconds_count', { hook: 'afterStart', plugin: 'probes' })! >= 1, 'the tap histogram names the plugin');
    assert.ok(sample(text, 'prober_probe_total', { probe_type: 'Readiness', result: 'successful' })! >= 1);
    assert.match(text, /# TYPE kubelet_pod_start_duration_seconds histogram/);
    assert.match(text, /# TYPE kubelet_runtime_operations_total counter/);
    assert.match(text, /# TYPE kubelet_running_pods gauge/);
  });

  it('serves the start timeline with every step in order and renders it with explain', async () => {
    // kubelet-ts's debugging views are on the local socket (and the main port), not on the read-only port.
    assert.equal((await get(`${base}/debug/pods/${ns}/m-test-node/timeline`)).status, 404);
    const socketPath = t.kubelet.mainServer!.socketPath!;
    const r = await socketGet(socketPath, `/debug/pods/${ns}/m-test-node/timeline`);
    assert.equal(r.status, 200, r.body);
    const tl = JSON.parse(r.body) as PodStartTimeline;
    const steps = tl.steps.map((s) => s.step);
    const first = (s: string) => steps.indexOf(s);
    for (const s of ['source-seen', 'admitted', 'volumes', 'sandbox', 'image', 'create', 'start', 'ready']) assert.ok(first(s) >= 0, `step ${s} in ${steps.join(', ')}`);
    assert.ok(first('source-seen') < first('admitted') && first('admitted') < first('sandbox') && first('sandbox') < first('create') && first('create') < first('start') && first('start') < first('ready'));
    assert.ok(tl.steps.every((s) => s.durationMs >= 0 && s.startMs >= tl.seenMs));
    const tap = tl.steps.find((s) => s.step === 'hook:afterStart');
    assert.equal(tap?.detail, 'probes', 'hook taps appear with their plugin');
    assert.ok(tl.readyMs! >= tl.seenMs);

    let out = '';
    const sink = new Writable({ write(chunk, _enc, cb) { out += chunk; cb(); } });
    const code = await explainCommand(['m', '-n', ns], { socketPath, stdout: sink, stderr: sink });
    assert.equal(code, 0, out);
    assert.match(out, new RegExp(`${ns}/m-test-node .* Ready after \\d+ ms`));
    assert.match(out, /sandbox \(with its network\)\s+\d+ ms\s+\d+ ms\s+\|/);
    assert.equal((await socketGet(socketPath, `/debug/pods/${ns}/nope/timeline`)).status, 404);
  });
});
