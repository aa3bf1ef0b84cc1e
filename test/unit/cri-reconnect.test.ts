import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { FakeCriServer } from '../fakes/fake-cri-server.ts';

/**
 * The runtime away, then back: the client keeps trying to connect every couple of seconds
 * however long it was away, so calls succeed within seconds of its return. (grpc's own
 * reconnect back-off grows to 120 s; with it, PLEG relists failed for about a minute after
 * containerd was back.)
 */
describe('cri-containerd: reconnects within seconds when the runtime comes back', function () {
  this.timeout(60_000);
  let dir: string;
  let fake: FakeCriServer | undefined;
  let client: CriClient | undefined;
  let down: net.Server | undefined;
  afterEach(async () => {
    client?.close();
    down?.close();
    await fake?.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('keeps its reconnect attempts at most ~2 s apart during a 25 s outage, and answers at once when the runtime is back', async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-reconnect-'));
    const sock = path.join(dir, 'cri.sock');
    // A runtime that is not serving: every connection is accepted and dropped at once, so
    // each reconnect attempt of the client is seen here.
    const attempts: number[] = [];
    down = net.createServer((s) => {
      attempts.push(Date.now());
      s.destroy();
    });
    await new Promise<void>((r) => down!.listen(sock, r));
    client = new CriClient(`unix://${sock}`);
    const awayUntil = Date.now() + 25_000;
    while (Date.now() < awayUntil) {
      await client.callRuntime('Version', { version: 'v1' }, 500).then(() => assert.fail('answered while away'), () => undefined);
      await sleep(1000);
    }
    const late = attempts.filter((t) => t > awayUntil - 12_000);
    const gaps = late.slice(1).map((t, i) => t - late[i]!);
    assert.ok(late.length >= 4, `only ${late.length} connection attempts in the last 12 s of the outage`);
    assert.ok(Math.max(...gaps) <= 3000, `attempts ${gaps.join(', ')} ms apart`);

    await new Promise<void>((r) => down!.close(() => r()));
    down = undefined;
    fake = await FakeCriServer.start(sock);
    const back = Date.now();
    for (;;) {
      const ok = await client.callRuntime('Version', { version: 'v1' }, 500).then(() => true, () => false);
      if (ok) break;
      assert.ok(Date.now() - back < 4000, 'still failing 4 s after the runtime came back');
      await sleep(100);
    }
  });
});
