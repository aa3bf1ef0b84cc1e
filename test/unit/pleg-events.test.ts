import assert from 'node:assert/strict';
import { Pleg } from '../../core/runtime/pleg.ts';
import { RuntimeCache } from '../../core/runtime/runtime-cache.ts';
import { MemoryRuntime } from '../../core/runtime/memory-runtime.ts';
import { LABEL } from '../../core/runtime/labels.ts';
import type { ContainerEvent, ContainerEventsEnd, PodSandboxConfig } from '../../core/runtime/types.ts';
import { captureLogger } from '../support/capture-logger.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * PLEG with a runtime that streams container events (containerd >= 1.7's GetContainerEvents):
 * an event makes it relist at once instead of at the next period; without a stream (containerd
 * 1.6) it relists every period only, and says so once; a closed stream is reopened.
 */
function sandbox(uid: string): PodSandboxConfig {
  return {
    metadata: { name: `p-${uid}`, uid, namespace: 'pleg', attempt: 0 },
    hostname: '',
    logDirectory: `/tmp/pleg-${uid}`,
    portMappings: [],
    labels: { [LABEL.podName]: `p-${uid}`, [LABEL.podNamespace]: 'pleg', [LABEL.podUID]: uid, [LABEL.managed]: 'true' },
    annotations: {},
    linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'POD', ipc: 'POD' } } },
  };
}

/** A stand-in for the runtime's stream: the test pushes events and ends it. */
class EventStream {
  opened = 0;
  private push: ((e: ContainerEvent) => void) | undefined;
  private end: ((how: ContainerEventsEnd) => void) | undefined;
  signals: AbortSignal[] = [];
  constructor(private readonly answer: ContainerEventsEnd | 'stream' = 'stream') {}
  readonly open = (onEvent: (e: ContainerEvent) => void, options: { signal: AbortSignal }): Promise<ContainerEventsEnd> => {
    this.opened++;
    this.signals.push(options.signal);
    if (this.answer !== 'stream') return Promise.resolve(this.answer);
    return new Promise((resolve) => {
      this.push = onEvent;
      this.end = resolve;
      options.signal.addEventListener('abort', () => resolve('ended'), { once: true });
    });
  };
  send(containerId = 'c1'): void {
    this.push?.({ containerId, type: 'started', at: Date.now() });
  }
  close(): void {
    this.end?.('ended');
  }
}

describe('PLEG: container events from the runtime', function () {
  let pleg: Pleg | undefined;
  afterEach(() => pleg?.stop());

  function makePleg(runtime: MemoryRuntime, stream: EventStream | undefined, periodMs = 60_000) {
    const { logger, lines } = captureLogger();
    const changes: string[][] = [];
    let relists = 0;
    pleg = new Pleg({
      cache: new RuntimeCache(runtime),
      periodMs,
      logger,
      onChange: (uids) => changes.push([...uids]),
      observe: () => relists++,
      ...(stream ? { events: stream.open } : {}),
    });
    return { pleg, lines, changes, relists: () => relists };
  }

  it('an event makes PLEG relist within a quarter second, not at the next period (60 s here)', async function () {
    const runtime = new MemoryRuntime();
    const stream = new EventStream();
    const p = makePleg(runtime, stream);
    await p.pleg.start();
    assert.equal(stream.opened, 1);
    await runtime.runPodSandbox(sandbox('u1'));
    // Without an event nothing looks before the period.
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(p.changes, []);
    stream.send();
    await waitFor('the pod reported changed after the event', async () => p.changes.some((c) => c.includes('u1')), 2000, 10);
    assert.equal(p.pleg.eventsSeen, 1);
    assert.ok(p.lines.some((l) => /container events from the runtime/.test(String(l.msg))), 'said once that events drive it');
  });

  it('a burst of events costs one relist, and a steady stream at most one each quarter second', async function () {
    const runtime = new MemoryRuntime();
    const stream = new EventStream();
    const p = makePleg(runtime, stream);
    await p.pleg.start();
    const before = p.relists();
    for (let i = 0; i < 50; i++) stream.send(`c${i}`);
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(p.relists() - before, 1, 'one relist for 50 events at once');
    // An event every 20 ms for a second: a pod starting under churn makes several a second.
    const mid = p.relists();
    const t0 = performance.now();
    for (let i = 0; i < 50; i++) {
      stream.send(`d${i}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 300));
    const extra = p.relists() - mid;
    // Bounded by the time it took (a loaded machine stretches the 20 ms sleeps), one per 250 ms.
    const most = Math.ceil((performance.now() - t0) / 250) + 1;
    assert.ok(extra >= 2 && extra <= most, `relists for an event every 20 ms over ${Math.round(performance.now() - t0)} ms: ${extra} (at most ${most})`);
  });

  it("a runtime without events (containerd 1.6): relists every period only, said once at info, not asked again", async function () {
    const runtime = new MemoryRuntime();
    const stream = new EventStream('unsupported');
    const p = makePleg(runtime, stream, 50);
    await p.pleg.start();
    await runtime.runPodSandbox(sandbox('u2'));
    await waitFor('the periodic relist sees the pod', async () => p.changes.some((c) => c.includes('u2')), 2000, 10);
    assert.equal(stream.opened, 1);
    assert.equal(p.lines.filter((l) => /streams no container events/.test(String(l.msg))).length, 1);
  });

  it('a stream the runtime closed is opened again; stop() ends it', async function () {
    this.timeout(10_000);
    const runtime = new MemoryRuntime();
    const stream = new EventStream();
    const p = makePleg(runtime, stream);
    await p.pleg.start();
    stream.close();
    await waitFor('the stream reopened (after 1 s)', async () => stream.opened === 2, 5000, 50);
    assert.ok(p.lines.some((l) => /container event stream ended/.test(String(l.msg))));
    // Events on the new stream still drive relists.
    await runtime.runPodSandbox(sandbox('u3'));
    stream.send();
    await waitFor('the pod reported changed', async () => p.changes.some((c) => c.includes('u3')), 2000, 10);
    p.pleg.stop();
    assert.equal(stream.signals.at(-1)!.aborted, true, "the stream's signal aborted at stop");
  });
});
