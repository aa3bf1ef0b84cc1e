/**
 * What every client command (`pods`, `logs`, `explain`, `events`) does before it talks to the
 * kubelet, the same way in each: a usage error (exit 2) with the command's usage, `-h`
 * (exit 0), a required POD argument, and `--root-dir` choosing the socket.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { podsCommand, PODS_USAGE } from '../../core/commands/pods.ts';
import { logsCommand, LOGS_USAGE } from '../../core/commands/logs.ts';
import { explainCommand, EXPLAIN_USAGE } from '../../core/commands/explain.ts';
import { eventsCommand, EVENTS_USAGE } from '../../core/commands/events.ts';
import { TextSink } from '../support/text-sink.ts';

const COMMANDS = [
  { name: 'pods', run: podsCommand, usage: PODS_USAGE, needsPod: false },
  { name: 'logs', run: logsCommand, usage: LOGS_USAGE, needsPod: true },
  { name: 'explain', run: explainCommand, usage: EXPLAIN_USAGE, needsPod: true },
  { name: 'events', run: eventsCommand, usage: EVENTS_USAGE, needsPod: false },
] as const;

describe('client commands: the shared start', function () {
  let dir: string;
  before(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-client-cmd-'))));
  after(() => fs.rm(dir, { recursive: true, force: true }));

  for (const c of COMMANDS) {
    it(`${c.name}: a usage error, -h, a missing POD and --root-dir`, async function () {
      const socketPath = path.join(dir, 'configured', 'kubelet-ts.sock');
      const run = async (argv: string[]) => {
        const out = new TextSink();
        const err = new TextSink();
        const code = await c.run(argv, { socketPath, stdout: out, stderr: err });
        return { code, out: out.text, err: err.text };
      };
      const bad = await run(['--root-dri', 'x']);
      assert.equal(bad.code, 2);
      assert.ok(bad.err.startsWith(`kubelet-ts ${c.name}: unknown flag '--root-dri' (did you mean --root-dir?)\n\n${c.usage}`), bad.err);
      assert.deepEqual(await run(['-h']), { code: 0, out: c.usage, err: '' });
      if (c.needsPod) {
        const none = await run([]);
        assert.equal(none.code, 2);
        assert.equal(none.err, `kubelet-ts ${c.name}: a pod name (or UID prefix) is required\n\n${c.usage}`);
      }
      const elsewhere = path.join(dir, 'elsewhere');
      const args = c.needsPod ? ['web', '--root-dir', elsewhere] : ['--root-dir', elsewhere];
      const unreachable = await run(args);
      assert.equal(unreachable.code, 1);
      assert.match(unreachable.err, new RegExp(`^kubelet-ts ${c.name}: cannot reach the kubelet at ${path.join(elsewhere, 'kubelet-ts.sock')}`));
    });
  }
});
