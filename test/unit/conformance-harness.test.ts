import assert from 'node:assert/strict';
import { realPartMissing } from '../support/real-part.ts';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseResults } from '../../tools/conformance/compare.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const SHARED = path.resolve(ROOT, '../shared/conformance');
const TOOLS = path.join(ROOT, 'tools/conformance');

/**
 * The extended conformance set's harness changes (scripts/conformance.sh --extended): the node in
 * its own PID namespace (a patched copy of the shared harness) and agnhost's nsenter that runs the
 * node's own tools. The runs themselves are `npm run conformance:extended`; this checks the parts.
 */
describe('conformance --extended: the harness whose node has its own PID namespace', function () {
  this.timeout(60_000);
  let tmp = '';
  beforeEach(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kts-conf-harness-')); });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("the patch applies to ../shared/conformance: containerd's holder is PID 1 of a new PID namespace, the kubelet joins it", async function () {
    if (!fs.existsSync(path.join(SHARED, 'stack.sh'))) realPartMissing(this, '../shared/conformance is missing', `${SHARED}/stack.sh not found`);
    const { stdout } = await run('bash', [path.join(TOOLS, 'pid-namespace-harness.sh'), SHARED, path.join(tmp, 'h')]);
    assert.equal(stdout.trim(), path.join(tmp, 'h/conformance/run.sh'));
    const stack = fs.readFileSync(path.join(tmp, 'h/conformance/stack.sh'), 'utf8');
    const node = fs.readFileSync(path.join(tmp, 'h/conformance/node.sh'), 'utf8');
    assert.match(stack, /setsid unshare --pid --fork --mount-proc --mount --propagation private bash \$C\/holder\.sh/);
    assert.match(stack, /mount --make-rshared \//);
    assert.equal((node.match(/nsenter --target \$CPID --mount --pid -- /g) ?? []).length, 2, 'both kubelets (upstream, kubelet-ts) start in the node PID namespace');
    assert.ok(fs.existsSync(path.join(tmp, 'h/k8s/control-plane.sh')), 'run.sh finds the control plane at ../k8s');
  });

  it("agnhost's nsenter stand-in runs the command from the entered namespace's PATH, not a busybox applet", async function () {
    if (!(await run('gcc', ['--version']).then(() => true, () => false))) realPartMissing(this, 'gcc is missing', 'scripts/install-node-packages.sh --test installs it');
    const bin = path.join(tmp, 'nsenter');
    await run('gcc', ['-static', '-O2', '-Wall', '-o', bin, path.join(TOOLS, 'nsenter.c')]);
    const { stdout } = await run(bin, ['--mount=/proc/self/ns/mnt', '--', 'sh', '-c', 'losetup --version']);
    assert.match(stdout, /util-linux/);
    await assert.rejects(run(bin, ['--net=/proc/self/ns/net', 'true']), (e: { stderr: string }) => /option --net=\/proc\/self\/ns\/net not supported/.test(e.stderr));
  });

  it('its reference: the shared extended one with the hostexec tests measured on this harness (32 local PV tests pass)', () => {
    const ref = parseResults(fs.readFileSync(path.join(TOOLS, 'reference-upstream-extended.txt'), 'utf8'), 'reference-upstream-extended.txt');
    const local = [...ref].filter(([n]) => n.includes('PersistentVolumes-local'));
    assert.equal(ref.size, 114);
    assert.deepEqual([local.filter(([, o]) => o === 'PASS').length, local.filter(([, o]) => o === 'SKIP').length], [32, 2]);
    assert.equal(ref.get('[sig-node] Mount propagation should propagate mounts within defined scopes'), 'PASS');
  });
});
