import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { refuseOnPureLane } from '../support/once-per-run.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** npm test's lanes (scripts/test-lanes.mjs): which file runs beside the node tests, and the guard behind it. */
describe('npm test lanes', function () {
  this.timeout(20_000);

  it('puts every test file but test/vm on exactly one lane: a node lane for those reaching a real part, directly or through support modules', async function () {
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(REPO, 'scripts', 'test-lanes.mjs'), '--lanes'], { cwd: REPO, env: { ...process.env, TEST_NODE_LANES: '2', TEST_FILES: '' } });
    const lanes = new Map(stdout.trim().split('\n').map((l) => { const [lane, file] = l.split(' '); return [file!, lane!]; }));
    const all = readdirSync(path.join(REPO, 'test'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.test.ts') && !f.startsWith('vm/')).map((f) => path.join('test', f)).sort();
    assert.deepEqual([...lanes.keys()].sort(), all);
    // Direct import of the shared environment; through the cluster suite (control plane); a kubelet process.
    assert.equal(lanes.get('test/integration/node-env.test.ts'), 'node1', 'its kubelets keep the default instance: the first lane');
    assert.equal(lanes.get('test/integration/tls-bootstrap.test.ts'), 'node1', 'upstream\'s fixed device plugin socket, as kubeadm-node: the first lane');
    assert.equal(lanes.get('test/integration/kubeadm-node.test.ts'), 'node1');
    assert.equal(lanes.get('test/integration/csi-persistent-volume.test.ts'), 'node1', 'the hostpath CSIDriver object, as csi-volume-expansion');
    assert.equal(lanes.get('test/integration/csi-volume-expansion.test.ts'), 'node1');
    assert.equal(lanes.get('test/integration/hardening.test.ts'), 'alone', 'it freezes containerd');
    assert.match(lanes.get('test/integration/runtime-instance.test.ts') ?? '', /^node[12]$/);
    assert.ok([...lanes.values()].includes('node2'), 'the second lane has files');
    // Fakes only; a helper from tools/node-env/util is not a real part.
    assert.equal(lanes.get('test/unit/kubelet-sync.test.ts'), 'pure');
    assert.equal(lanes.get('test/unit/free-port.test.ts'), 'pure', 'a guard of the host (host-requirement.ts) is not a real part');
    assert.equal(lanes.get('test/unit/csi-fs-group.test.ts'), 'pure');
    assert.equal(lanes.get('test/unit/test-lanes.test.ts'), 'pure');
  });

  it('refuses a real part on the pure lane, naming what was asked for and what to change', function () {
    const before = process.env.KUBELET_TS_TEST_LANE;
    try {
      process.env.KUBELET_TS_TEST_LANE = 'pure';
      assert.throws(() => refuseOnPureLane('the control plane'), /^Error: the control plane was asked for by a test file on npm test's pure lane.*REAL_PART_MODULES/);
      process.env.KUBELET_TS_TEST_LANE = 'node';
      refuseOnPureLane('the control plane');
    } finally {
      if (before === undefined) delete process.env.KUBELET_TS_TEST_LANE;
      else process.env.KUBELET_TS_TEST_LANE = before;
    }
  });
});
