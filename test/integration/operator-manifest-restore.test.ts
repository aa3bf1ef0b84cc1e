/**
 * Issue 17's repro on real containerd: a Running pod with `terminationGracePeriodSeconds: 5`,
 * its manifest broken (`oops: [` appended) and restored 2 s later, or removed and put back
 * while the pod stops. /pods must list each UID once, and the pod must run again as soon as
 * its old containers are gone, not at the next periodic resync (~50 s later before the fix).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { freePort } from '../../tools/node-env/util.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { httpGet } from '../support/http.ts';
import { isRunning, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

const NS = 'h17-restore';
const GRACE_S = 5;

describe('operator: a manifest broken, or removed, and restored', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let t: TestKubelet;
  let port: number;

  before(async function () {
    env = await nodeEnvOrSkip(this);
    port = await freePort();
    // The periodic resync a minute away, as by default: what the pod waited for before the fix.
    t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]], config: { readOnlyPort: port, syncFrequencyMs: 60_000 } });
  });

  after(async function () {
    await t?.dispose();
  });

  const manifest = (name: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: ${NS}
spec:
  terminationGracePeriodSeconds: ${GRACE_S}
  containers:
    - name: app
      image: ${env.images.busybox}
      command: ["sleep", "3600"]
`;

  /** GET /pods as an operator would, over the read-only port. */
  const podsNamed = async (name: string): Promise<V1Pod[]> => {
    const r = await httpGet(`http://127.0.0.1:${port}/pods`, 3000);
    return ((JSON.parse(r.body) as { items: V1Pod[] }).items ?? []).filter((p) => p.metadata?.name === `${name}-${t.config.nodeName}`);
  };

  /** Polls /pods for `ms`: fails on a UID listed twice; resolves when `done` holds. */
  async function watchUntil(name: string, done: (pods: V1Pod[]) => boolean, ms: number): Promise<number> {
    const started = Date.now();
    while (Date.now() - started < ms) {
      const pods = await podsNamed(name);
      const uids = pods.map((p) => p.metadata?.uid);
      assert.equal(new Set(uids).size, uids.length, `/pods lists a UID twice: ${uids.join(', ')}`);
      if (done(pods)) return Date.now() - started;
      await sleep(100);
    }
    assert.fail(`${name}: not reached within ${ms} ms; /pods: ${JSON.stringify((await podsNamed(name)).map((p) => [p.metadata?.uid, p.status?.phase, !!p.metadata?.deletionTimestamp]))}`);
  }

  const runningAgain = (uid: string) => (pods: V1Pod[]) => pods.length === 1 && pods[0]!.metadata?.uid === uid && !pods[0]!.metadata?.deletionTimestamp && isRunning(pods[0]);

  it('broken (`oops: [` appended) and restored 2 s later: the pod keeps running, listed once', async () => {
    const file = path.join(t.manifestDir, 'h17-hello.yaml');
    await fs.writeFile(file, manifest('h17-hello'));
    await t.waitForPod('h17-hello', isRunning, 30_000, 'Running');
    const uid = (await podsNamed('h17-hello'))[0]!.metadata!.uid!;
    await fs.appendFile(file, 'oops: [\n');
    await watchUntil('h17-hello', () => false, 2000).catch((e: Error) => {
      if (!/not reached/.test(e.message)) throw e;
    });
    await fs.writeFile(file, manifest('h17-hello'));
    // Restored: the same pod, never stopped, never listed twice.
    await sleep(1500);
    await watchUntil('h17-hello', runningAgain(uid), 3000);
    await fs.rm(file);
    await watchUntil('h17-hello', (pods) => pods.length === 0, 30_000);
  });

  it('removed and put back while it stops: listed once, Running again right after its grace period', async () => {
    const file = path.join(t.manifestDir, 'h17-back.yaml');
    await fs.writeFile(file, manifest('h17-back'));
    await t.waitForPod('h17-back', isRunning, 30_000, 'Running');
    const uid = (await podsNamed('h17-back'))[0]!.metadata!.uid!;
    await fs.rm(file);
    await watchUntil('h17-back', (pods) => pods.some((p) => !!p.metadata?.deletionTimestamp), 5000);
    await fs.writeFile(file, manifest('h17-back'));
    // sleep as PID 1 ignores SIGTERM: the old containers take the whole grace period to stop.
    const took = await watchUntil('h17-back', runningAgain(uid), (GRACE_S + 15) * 1000);
    assert.ok(took < (GRACE_S + 10) * 1000, `Running again after ${took} ms`);
    await fs.rm(file);
    await watchUntil('h17-back', (pods) => pods.length === 0, 30_000);
  });
});
