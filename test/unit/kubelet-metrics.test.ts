import assert from 'node:assert/strict';
import http from 'node:http';
import { silentLogger } from '../../core/logger.ts';
import { KubeletServer } from '../../core/server/read-only-server.ts';
import { createHooks } from '../../core/hooks.ts';
import { isolateTaps } from '../../core/plugins/tap-isolation.ts';
import { instrumentRuntime } from '../../core/runtime/instrumented-runtime.ts';
import type { ContainerRuntime } from '../../core/runtime/types.ts';
import { KubeletMetrics, metricsRouteHandler, runtimeOperationType } from '../../core/metrics/kubelet-metrics.ts';
import { hookContext } from '../../core/util/cancellation.ts';

/** `# TYPE name type` lines of an exposition. */
function types(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1]!, m[2]!);
  return out;
}

/** The value of the sample `name{labels}` (labels in any order), or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)) got[l[1]!] = l[2]!;
    if (Object.keys(labels).length !== Object.keys(got).length) continue;
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** Label names used by a metric's samples (excluding histogram's `le`). */
function labelNames(text: string, name: string): Set<string> {
  const out = new Set<string>();
  const re = new RegExp(`^${name}(?:_bucket|_sum|_count)?\\{([^}]*)\\}`, 'gm');
  for (const m of text.matchAll(re)) for (const l of m[1]!.matchAll(/([a-zA-Z_]+)=/g)) if (l[1] !== 'le') out.add(l[1]!);
  return out;
}

describe('KubeletMetrics', () => {
  const expected: Array<[string, string, string[]]> = [
    ['kubelet_pod_start_duration_seconds', 'histogram', []],
    ['kubelet_pod_start_sli_duration_seconds', 'histogram', ['first_with_network']],
    ['kubelet_pod_worker_duration_seconds', 'histogram', ['operation_type']],
    ['kubelet_pleg_relist_duration_seconds', 'histogram', []],
    ['kubelet_pleg_relist_interval_seconds', 'histogram', []],
    ['kubelet_pleg_last_seen_seconds', 'gauge', []],
    ['kubelet_runtime_operations_total', 'counter', ['operation_type']],
    ['kubelet_runtime_operations_duration_seconds', 'histogram', ['operation_type']],
    ['kubelet_runtime_operations_errors_total', 'counter', ['operation_type']],
    ['kubelet_run_podsandbox_duration_seconds', 'histogram', ['runtime_handler']],
    ['kubelet_running_pods', 'gauge', []],
    ['kubelet_running_containers', 'gauge', ['container_state']],
    ['prober_probe_total', 'counter', ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid']],
    ['kubelet_ts_hook_tap_duration_seconds', 'histogram', ['hook', 'plugin']],
    ['kubelet_ts_hook_tap_errors_total', 'counter', ['hook', 'plugin']],
  ];

  /** A metrics instance where every series has been touched once. */
  function populated(): KubeletMetrics {
    const m = new KubeletMetrics();
    m.observePodStart(1.5);
    m.observePodWorker('sync', 12);
    m.observeRelist(4, 1000);
    m.observeRuntime('runPodSandbox', 250, undefined);
    m.observeRuntime('pullImage', 10, new Error('boom'));
    m.setRunning(2, { CONTAINER_RUNNING: 3, exited: 1 });
    m.observeProbe({ probe: 'readiness', result: 'success', containerName: 'web', pod: { metadata: { name: 'p', namespace: 'ns', uid: 'u1' } } });
    m.observeTap('beforeSandbox', 'cni-exec', 3, undefined);
    m.observeTap('beforeSandbox', 'cni-exec', 3, new Error('tap failed'));
    return m;
  }

  it('exports every metric with its upstream name, type and label names', async () => {
    const text = await populated().text();
    const t = types(text);
    for (const [name, type, labels] of expected) {
      assert.equal(t.get(name), type, `${name} should be a ${type}`);
      assert.deepEqual([...labelNames(text, name)].sort(), [...labels].sort(), `${name} label names`);
    }
  });

  it('lists every metric even before anything is observed', async () => {
    const text = await new KubeletMetrics().text();
    const t = types(text);
    for (const [name, type] of expected) assert.equal(t.get(name), type, name);
    assert.equal(sample(text, 'kubelet_running_pods'), 0);
    for (const s of ['created', 'running', 'exited', 'unknown']) assert.equal(sample(text, 'kubelet_running_containers', { container_state: s }), 0);
  });

  it('uses upstream buckets', async () => {
    const text = await populated().text();
    assert.equal(sample(text, 'kubelet_pod_start_duration_seconds_bucket', { le: '3600' }), 1);
    assert.equal(sample(text, 'kubelet_pod_worker_duration_seconds_bucket', { operation_type: 'sync', le: '0.005' }), 0);
    assert.equal(sample(text, 'kubelet_pod_worker_duration_seconds_bucket', { operation_type: 'sync', le: '0.025' }), 1);
    // ExponentialBuckets(.005, 2.5, 14): 0.005, 0.0125, 0.03125, ...
    assert.notEqual(sample(text, 'kubelet_runtime_operations_duration_seconds_bucket', { operation_type: 'pull_image', le: '0.0125' }), undefined);
  });

  it('counts runtime operations under upstream operation types, with errors and the sandbox histogram', async () => {
    const m = new KubeletMetrics();
    m.observeRuntime('runPodSandbox', 300, undefined);
    m.observeRuntime('runPodSandbox', 100, new Error('x'));
    m.observeRuntime('createContainer', 20, undefined);
    m.observeRuntime('listPodSandboxes', 2, undefined);
    m.observeRuntime('close', 1, undefined);
    const text = await m.text();
    assert.equal(sample(text, 'kubelet_runtime_operations_total', { operation_type: 'run_podsandbox' }), 2);
    assert.equal(sample(text, 'kubelet_runtime_operations_errors_total', { operation_type: 'run_podsandbox' }), 1);
    assert.equal(sample(text, 'kubelet_runtime_operations_total', { operation_type: 'create_container' }), 1);
    assert.equal(sample(text, 'kubelet_runtime_operations_total', { operation_type: 'list_podsandbox' }), 1);
    assert.equal(sample(text, 'kubelet_runtime_operations_duration_seconds_count', { operation_type: 'run_podsandbox' }), 2);
    assert.ok(Math.abs(sample(text, 'kubelet_runtime_operations_duration_seconds_sum', { operation_type: 'run_podsandbox' })! - 0.4) < 1e-9);
    assert.equal(sample(text, 'kubelet_run_podsandbox_duration_seconds_count', { runtime_handler: '' }), 2);
    assert.equal(sample(text, 'kubelet_runtime_operations_total', { operation_type: 'close' }), undefined);
  });

  it('maps every ContainerRuntime method to the CRI operation type', () => {
    assert.equal(runtimeOperationType('runPodSandbox'), 'run_podsandbox');
    assert.equal(runtimeOperationType('stopPodSandbox'), 'stop_podsandbox');
    assert.equal(runtimeOperationType('removePodSandbox'), 'remove_podsandbox');
    assert.equal(runtimeOperationType('podSandboxStatus'), 'podsandbox_status');
    assert.equal(runtimeOperationType('listPodSandboxes'), 'list_podsandbox');
    assert.equal(runtimeOperationType('createContainer'), 'create_container');
    assert.equal(runtimeOperationType('startContainer'), 'start_container');
    assert.equal(runtimeOperationType('stopContainer'), 'stop_container');
    assert.equal(runtimeOperationType('removeContainer'), 'remove_container');
    assert.equal(runtimeOperationType('listContainers'), 'list_containers');
    assert.equal(runtimeOperationType('containerStatus'), 'container_status');
    assert.equal(runtimeOperationType('execSync'), 'exec_sync');
    assert.equal(runtimeOperationType('imageStatus'), 'image_status');
    assert.equal(runtimeOperationType('pullImage'), 'pull_image');
    assert.equal(runtimeOperationType('version'), 'version');
    assert.equal(runtimeOperationType('updateContainerResources'), 'update_container_resources');
  });

  it('moves the runtime series through instrumentRuntime', async () => {
    const m = new KubeletMetrics();
    const fake = {
      version: async () => ({ runtimeName: 'fake', runtimeVersion: '1', runtimeApiVersion: 'v1' }),
      imageStatus: async () => null,
      pullImage: async () => {
        throw new Error('no such image');
      },
    } as unknown as ContainerRuntime;
    const rt = instrumentRuntime(new Proxy(fake, { get: (t, k) => (t as any)[k] ?? (async () => undefined) }), silentLogger(), m.observeRuntime);
    await rt.version();
    await rt.imageStatus('x');
    await rt.pullImage('x').catch(() => {});
    const text = await m.text();
    assert.equal(sample(text, 'kubelet_runtime_operations_total', { operation_type: 'version' }), 1);
    assert.equal(sample(text, 'kubelet_runtime_operations_total', { operation_type: 'image_status' }), 1);
    assert.equal(sample(text, 'kubelet_runtime_operations_errors_total', { operation_type: 'pull_image' }), 1);
  });

  it('observes pod workers under upstream operation types (terminate is kill)', async () => {
    const m = new KubeletMetrics();
    m.observePodWorker('sync', 50);
    m.observePodWorker('sync', 70);
    m.observePodWorker('terminate', 1200);
    const text = await m.text();
    assert.equal(sample(text, 'kubelet_pod_worker_duration_seconds_count', { operation_type: 'sync' }), 2);
    assert.equal(sample(text, 'kubelet_pod_worker_duration_seconds_count', { operation_type: 'kill' }), 1);
    assert.ok(Math.abs(sample(text, 'kubelet_pod_worker_duration_seconds_sum', { operation_type: 'kill' })! - 1.2) < 1e-9);
  });

  it('observes PLEG relists: duration, interval (not for the first) and last seen', async () => {
    const m = new KubeletMetrics();
    const before = Date.now() / 1000;
    m.observeRelist(5, 0);
    m.observeRelist(7, 1000);
    const text = await m.text();
    assert.equal(sample(text, 'kubelet_pleg_relist_duration_seconds_count'), 2);
    assert.ok(Math.abs(sample(text, 'kubelet_pleg_relist_duration_seconds_sum')! - 0.012) < 1e-9);
    assert.equal(sample(text, 'kubelet_pleg_relist_interval_seconds_count'), 1);
    assert.equal(sample(text, 'kubelet_pleg_relist_interval_seconds_sum'), 1);
    const seen = sample(text, 'kubelet_pleg_last_seen_seconds')!;
    assert.ok(seen >= before - 1 && seen <= Date.now() / 1000 + 1, `last seen ${seen} is a unix timestamp in seconds`);
  });

  it('observes pod starts in both start histograms', async () => {
    const m = new KubeletMetrics();
    m.observePodStart(2.5);
    m.observePodStart(4, 1, true);
    const text = await m.text();
    assert.equal(sample(text, 'kubelet_pod_start_duration_seconds_count'), 2);
    assert.equal(sample(text, 'kubelet_pod_start_duration_seconds_sum'), 6.5);
    assert.equal(sample(text, 'kubelet_pod_start_sli_duration_seconds_count', { first_with_network: 'false' }), 1);
    assert.equal(sample(text, 'kubelet_pod_start_sli_duration_seconds_sum', { first_with_network: 'true' }), 1);
  });

  it('sets the running gauges, resetting states not given', async () => {
    const m = new KubeletMetrics();
    m.setRunning(3, { CONTAINER_RUNNING: 4, CONTAINER_EXITED: 1 });
    m.setRunning(2, { running: 2 });
    let text = await m.text();
    assert.equal(sample(text, 'kubelet_running_pods'), 2);
    assert.equal(sample(text, 'kubelet_running_containers', { container_state: 'running' }), 2);
    assert.equal(sample(text, 'kubelet_running_containers', { container_state: 'exited' }), 0);
    m.setRunningFrom([
      { sandboxes: [{ state: 'SANDBOX_READY' }], containers: [{ state: 'CONTAINER_RUNNING' }, { state: 'CONTAINER_EXITED' }] },
      { sandboxes: [{ state: 'SANDBOX_NOTREADY' }], containers: [{ state: 'CONTAINER_EXITED' }] },
    ]);
    text = await m.text();
    assert.equal(sample(text, 'kubelet_running_pods'), 1);
    assert.equal(sample(text, 'kubelet_running_containers', { container_state: 'running' }), 1);
    assert.equal(sample(text, 'kubelet_running_containers', { container_state: 'exited' }), 2);
  });

  it('counts probes with upstream label values and forgets a removed pod', async () => {
    const m = new KubeletMetrics();
    const pod = { metadata: { name: 'web', namespace: 'prod', uid: 'uid-1' } };
    m.observeProbe({ probe: 'liveness', result: 'failure', containerName: 'app', pod });
    m.observeProbe({ probe: 'liveness', result: 'failure', containerName: 'app', pod });
    m.observeProbe({ probe: 'startup', result: 'success', containerName: 'app', pod });
    let text = await m.text();
    const base = { container: 'app', pod: 'web', namespace: 'prod', pod_uid: 'uid-1' };
    assert.equal(sample(text, 'prober_probe_total', { ...base, probe_type: 'Liveness', result: 'failed' }), 2);
    assert.equal(sample(text, 'prober_probe_total', { ...base, probe_type: 'Startup', result: 'successful' }), 1);
    m.forgetPod('uid-1');
    text = await m.text();
    assert.equal(sample(text, 'prober_probe_total', { ...base, probe_type: 'Liveness', result: 'failed' }), undefined);
  });

  it('names the hook and the plugin in the tap histogram, through the tapable interceptor', async () => {
    const m = new KubeletMetrics();
    const hooks = createHooks();
    isolateTaps(hooks, silentLogger(), { timeoutMs: 1000, observe: m.observeTap });
    hooks.podRemoved.tapPromise('my-plugin', async () => {});
    hooks.podRemoved.tapPromise('bad-plugin', async () => {
      throw new Error('nope');
    });
    await hooks.podRemoved.promise({ metadata: { name: 'p', uid: 'u' } }, hookContext()).catch(() => {});
    const text = await m.text();
    assert.equal(sample(text, 'kubelet_ts_hook_tap_duration_seconds_count', { hook: 'podRemoved', plugin: 'my-plugin' }), 1);
    assert.equal(sample(text, 'kubelet_ts_hook_tap_duration_seconds_count', { hook: 'podRemoved', plugin: 'bad-plugin' }), 1);
    assert.equal(sample(text, 'kubelet_ts_hook_tap_errors_total', { hook: 'podRemoved', plugin: 'bad-plugin' }), 1);
    assert.equal(sample(text, 'kubelet_ts_hook_tap_errors_total', { hook: 'podRemoved', plugin: 'my-plugin' }), undefined);
  });

  it('keeps instances apart (no global registry)', async () => {
    const a = new KubeletMetrics();
    const b = new KubeletMetrics();
    a.observePodWorker('sync', 1);
    assert.equal(sample(await a.text(), 'kubelet_pod_worker_duration_seconds_count', { operation_type: 'sync' }), 1);
    assert.equal(sample(await b.text(), 'kubelet_pod_worker_duration_seconds_count', { operation_type: 'sync' }), undefined);
  });

  it('serves /metrics with the Prometheus content type', async () => {
    const m = populated();
    const server = new KubeletServer(silentLogger());
    server.route('/metrics', metricsRouteHandler(m));
    const port = await server.listen('127.0.0.1', 0);
    try {
      const { status, type, body } = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: '/metrics', timeout: 3000 }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
          })
          .on('error', reject);
      });
      assert.equal(status, 200);
      assert.match(type, /^text\/plain; version=0\.0\.4/);
      assert.equal(sample(body, 'kubelet_running_pods'), 2);
    } finally {
      await server.close();
    }
  });
});
