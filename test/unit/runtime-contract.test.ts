import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { checkRuntimeContract, describeRuntimeContract, MemoryRuntime, type RuntimeContractSubject } from '../../core/sdk/testing/index.ts';

/**
 * The runtime contract against the in-memory runtime (it must keep it: core tests use it in
 * place of containerd), and against runtimes broken on purpose, one rule each: the contract
 * must fail them naming that rule. The same contract runs against cri-containerd on real
 * containerd in test/integration/runtime-contract.test.ts.
 */
const commands: RuntimeContractSubject['commands'] = { run: () => ['sleep'], exit: (code) => ['exit', String(code)], print: (line) => ['echo', line] };

let workDir: string;
const subject = async (runtime = new MemoryRuntime()): Promise<RuntimeContractSubject> => ({ runtime, image: 'example.test/contract:1', workDir, commands, stateTimeoutMs: 2000 });

describe('the runtime contract', function () {
  before(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-runtime-contract-'));
  });
  after(async () => {
    await fs.rm(workDir, { recursive: true, force: true });
  });

  describeRuntimeContract('in-memory runtime', () => subject());

  /** A runtime breaking one promise of the contract, and the rule that must name it. */
  const broken: Array<{ what: string; rule: RegExp; patch: (r: MemoryRuntime) => void }> = [
    {
      what: 'drops sandbox annotations',
      rule: /^sandbox labels and annotations round-trip/,
      patch: (r) => {
        const list = r.listPodSandboxes.bind(r);
        r.listPodSandboxes = async (f) => (await list(f)).map((s) => ({ ...s, annotations: {} }));
      },
    },
    {
      what: 'fails a second stopPodSandbox',
      rule: /^stopPodSandbox is idempotent/,
      patch: (r) => {
        const stop = r.stopPodSandbox.bind(r);
        const stopped = new Set<string>();
        r.stopPodSandbox = async (id) => {
          if (stopped.has(id)) throw new Error('already stopped');
          stopped.add(id);
          await stop(id);
        };
      },
    },
    {
      what: 'answers the status of a removed container without NotFound',
      rule: /^removeContainer removes it, again is no error, and its status is then NotFound/,
      patch: (r) => {
        const status = r.containerStatus.bind(r);
        r.containerStatus = async (id) => status(id).catch(() => { throw new Error('gone'); });
      },
    },
    {
      what: 'reports a download with more bytes done than its size',
      rule: /^pullProgress, if offered, lists downloads/,
      patch: (r) => {
        r.pullProgress = async () => [{ ref: 'layer-sha256:0', offsetBytes: 2048, totalBytes: 1024, startedAt: 0, updatedAt: 0 }];
      },
    },
    {
      what: 'ignores the label selector of listContainers',
      rule: /^listContainers filters by sandbox and by label/,
      patch: (r) => {
        const list = r.listContainers.bind(r);
        r.listContainers = async (f) => list(f?.podSandboxId ? { podSandboxId: f.podSandboxId } : {});
      },
    },
  ];
  for (const b of broken) {
    it(`fails a runtime that ${b.what}, naming the broken rule`, async function () {
      const runtime = new MemoryRuntime();
      b.patch(runtime);
      const failures = await checkRuntimeContract(await subject(runtime));
      assert.ok(failures.length >= 1, 'the contract passed a broken runtime');
      assert.ok(failures.some((f) => b.rule.test(f.rule)), `no failure of the rule ${b.rule}: ${JSON.stringify(failures)}`);
      for (const f of failures) assert.ok(f.message.length > 0, `rule "${f.rule}" failed without saying how`);
    });
  }

  it('passes the in-memory runtime as a whole (checkRuntimeContract, outside the mocha suite)', async function () {
    assert.deepEqual(await checkRuntimeContract(await subject()), []);
  });
});
