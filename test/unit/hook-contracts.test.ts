/**
 * Hook contracts as core/hooks.ts states them (issue 24 item 5), on a real Kubelet over the
 * fake CRI: `podStatusChanged` is a notification (a throwing tap is logged naming its plugin
 * and changes nothing else), and a `podRemoved` tap that always throws keeps its pod
 * terminating, with a Warning event naming the plugin at every retry.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { V1PodStatus } from '@kubernetes/client-node';
import { NOTIFICATION_HOOKS, STAGE, createHooks } from '../../core/hooks.ts';
import { definePlugin } from '../../core/plugins/plugin-api.ts';
import { fakeCriSuite } from '../support/fake-cri-suite.ts';
import { captureLogger } from '../support/capture-logger.ts';
import { isRunning, podManifest } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

const IMAGE = 'busybox:1.36';
const app = { name: 'app', image: IMAGE, command: ['sleep', '3600'] };

describe('hook contracts (core/hooks.ts)', function () {
  this.timeout(30_000);
  const suite = fakeCriSuite({ prefix: 'kts-hook-contracts-', images: [IMAGE] });

  it('every hook states its contract where it is declared: Again, Changes, Time, Throw', function () {
    const source = readFileSync(fileURLToPath(new URL('../../core/hooks.ts', import.meta.url)), 'utf8');
    for (const name of Object.keys(createHooks())) {
      const m = new RegExp(`/\\*\\*((?:(?!\\*/)[\\s\\S])*)\\*/\\s*${name}: new `).exec(source);
      assert.ok(m, `${name} has a doc comment`);
      for (const part of ['Again:', 'Changes:', 'Time:', 'Throw:']) assert.ok(m[1]!.includes(part), `${name}'s doc says ${part}`);
      if (NOTIFICATION_HOOKS.has(name as never)) assert.match(m[1]!, /a notification/, `${name}'s doc says it is a notification`);
    }
  });

  it('podStatusChanged is a notification: a throwing tap is logged naming its plugin; the sync, the other observers and the status go on', async function () {
    const { logger, lines } = captureLogger();
    const seen: V1PodStatus[] = [];
    const thrower = definePlugin({ name: 'status-thrower', apply: (ctx) => ctx.hooks.podStatusChanged.tap('x', () => { throw new Error('dashboard unreachable'); }) });
    const observer = definePlugin({ name: 'status-observer', apply: (ctx) => ctx.hooks.podStatusChanged.tap({ name: 'x', stage: STAGE.OBSERVE }, (_pod, status) => void seen.push(status)) });
    const t = await suite.start({}, [thrower, observer], { logger });
    await t.writeManifest('web.json', podManifest('web', [app]));
    await t.waitForPod('web', isRunning, 10_000, 'Running');
    await waitFor('the later observer saw Running', () => seen.some((s) => s.phase === 'Running'), 5000);
    const failed = lines.filter((l) => l.hook === 'podStatusChanged' && l.plugin === 'status-thrower' && l.level === 40);
    assert.ok(failed.length > 0, 'the throw is logged naming the plugin and the hook');
    assert.equal(failed[0]!.err, 'dashboard unreachable');
    assert.deepEqual(lines.filter((l) => l.msg === 'pod worker operation failed'), [], 'no sync failed because of it');
  });

  it('a podRemoved tap that always throws keeps the pod terminating, with a Warning event naming the plugin at each retry', async function () {
    const holder = definePlugin({ name: 'lease-holder', apply: (ctx) => ctx.hooks.podRemoved.tapPromise('x', async () => { throw new Error('cannot release the lease'); }) });
    const t = await suite.start({}, [holder]);
    await t.writeManifest('web.json', podManifest('web', [app], { terminationGracePeriodSeconds: 0 }));
    await t.waitForPod('web', isRunning, 10_000, 'Running');
    await t.removeManifest('web.json');
    // Retries on the pod workers' error back-off: 1 s, then 2 s.
    const events = await waitFor('two Warnings FailedPodRemovedHook', () => {
      const e = t.kubelet.events.list().filter((x) => x.reason === 'FailedPodRemovedHook');
      return e.reduce((n, x) => n + x.count, 0) >= 2 ? e : undefined;
    }, 10_000);
    assert.equal(events[0]!.type, 'Warning');
    assert.equal(events[0]!.involvedObject.name, 'web-test-node');
    assert.match(events[0]!.message, /^plugin 'lease-holder' \(hook podRemoved\): cannot release the lease; the pod stays terminating/);
    assert.ok(t.pod('web'), 'the pod is still there, terminating');
    assert.equal(suite.fake.containers().length, 0, 'its containers are gone all the same');
  });

  it('a status that cannot be published (a podStatus tap throws) is logged with the pod and the plugin, in the sync and at removal', async function () {
    const { logger, lines } = captureLogger();
    let sandboxFails = true;
    let statusFails = true;
    const breaker = definePlugin({
      name: 'status-breaker',
      apply(ctx) {
        ctx.hooks.beforeSandbox.tapPromise('x', async (config) => {
          if (sandboxFails) throw new Error('no network for it');
          return config;
        });
        ctx.hooks.podStatus.tapPromise('x', async (status) => {
          if (statusFails) throw new Error('conditions service down');
          return status;
        });
      },
    });
    const t = await suite.start({}, [breaker], { logger });
    await t.writeManifest('web.json', podManifest('web', [app], { terminationGracePeriodSeconds: 0 }));
    const notPublished = () => lines.filter((l) => l.msg === 'pod status not published');
    // The sync fails at the sandbox; the status it then tries to publish fails too (pod-sync.ts).
    await waitFor('a sync that failed its sandbox logs the status it could not publish', () => notPublished().length >= 1, 10_000);
    assert.deepEqual([notPublished()[0]!.pod, notPublished()[0]!.plugin], ['default/web-test-node', 'status-breaker']);
    sandboxFails = false;
    statusFails = false;
    await t.waitForPod('web', isRunning, 10_000, 'Running once the plugin lets it');
    // The removal publishes the Terminating status outside the pod's worker (sync-loop.ts).
    statusFails = true;
    const before = notPublished().length;
    await t.removeManifest('web.json');
    await waitFor('the removal logs the status it could not publish', () => notPublished().length > before, 10_000);
    const atRemoval = notPublished().at(-1)!;
    assert.deepEqual([atRemoval.pod, atRemoval.plugin, atRemoval.err], ['default/web-test-node', 'status-breaker', "plugin 'status-breaker' (hook podStatus): conditions service down"]);
    statusFails = false;
  });
});
