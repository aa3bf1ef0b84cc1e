import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { compareResults, formatComparison, parseResults } from '../../tools/conformance/compare.ts';
import { ginkgoResults } from '../../tools/conformance/ginkgo-report.ts';
import { focusOf, RESOURCE_TESTS } from '../../tools/conformance/resource-tests.ts';
import { run } from '../../tools/node-env/util.ts';
import { SHARED_DIR } from '../support/control-plane.ts';
import { nodeVmBaseDir, systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';
import { realPartMissing } from '../support/real-part.ts';

/**
 * Upstream's conformance tests that touch cgroups and resources, run on the node VM (systemd
 * driver, cgroup v2, containerd 2.1) by upstream's e2e suite v1.28.7 from ../shared/conformance,
 * against this run's control plane: they must pass there as they pass with upstream's kubelet on
 * the host's harness (reference-upstream.txt). The harness's own images, built by its images.sh
 * into this run's registry (which the guest reaches over ssh).
 */
const CONFORMANCE = join(SHARED_DIR, 'conformance');
describe('node VM: upstream conformance tests of cgroups and resources', function () {
  this.timeout(2_700_000);
  let t: TestNodeVm;
  let unexpose: (() => Promise<void>) | undefined;
  const dir = join(nodeVmBaseDir(), 'conformance');

  before(async function () {
    this.timeout(1_800_000);
    if (!existsSync(join(CONFORMANCE, 'unpack.sh'))) realPartMissing(this, 'upstream e2e suite', `${CONFORMANCE}/unpack.sh not found (../shared/conformance beside the project)`);
    for (const bin of ['python3', 'skopeo']) {
      if ((await run('sh', ['-c', `command -v ${bin}`], { allowFailure: true })).code !== 0) realPartMissing(this, 'the e2e images', `${bin} not found (scripts/install-node-packages.sh --test)`);
    }
    t = await systemdNodeVmOrSkip(this);
    await mkdir(dir, { recursive: true });
    await run('bash', [join(CONFORMANCE, 'unpack.sh'), dir], { timeoutMs: 300_000 });
    // The harness's images, into this run's registry (the guest pulls it through hosts.toml): images.sh pushes to REG when it answers.
    await run('bash', [join(CONFORMANCE, 'images.sh'), join(dir, 'bin'), join(CONFORMANCE, 'tree')], { env: { CONF_DIR: dir, REG: t.env.registry }, timeoutMs: 900_000 });
    unexpose = await t.exposeKubeletAtNodeIp();
  });

  after(async function () {
    await unexpose?.();
  });

  it(`${RESOURCE_TESTS.length} tests pass on systemd + cgroup v2 + containerd 2.1 as with upstream's kubelet on the host`, async function () {
    const reg = t.env.registry;
    const repoList = join(dir, 'repo-list.yaml');
    await writeFile(
      repoList,
      [
        `gcAuthenticatedRegistry: ${reg}/authenticated`, `promoterE2eRegistry: ${reg}/e2e-test-images`, `buildImageRegistry: ${reg}/build-image`,
        `gcEtcdRegistry: ${reg}`, `gcRegistry: ${reg}`, `sigStorageRegistry: ${reg}/sig-storage`, `privateRegistry: ${reg}/k8s-authenticated-test`,
        `dockerLibraryRegistry: ${reg}/library`, `cloudProviderGcpRegistry: ${reg}/cloud-provider-gcp`, '',
      ].join('\n'),
    );
    const report = join(dir, 'report');
    await mkdir(report, { recursive: true });
    const t0 = performance.now();
    // Two ginkgo processes: the guest has 2 vCPUs, and the e2e framework's own per-test waits overlap.
    const e2e = await run(
      join(dir, 'bin', 'ginkgo'),
      [
        '--procs=2', '--timeout=40m', '--no-color', `--focus=${focusOf(RESOURCE_TESTS)}`, `--output-dir=${report}`, '--json-report=report.json',
        join(dir, 'bin', 'e2e.test'), '--',
        `--kubeconfig=${t.cp.adminKubeconfig}`, '--provider=skeleton', `--report-dir=${report}`, '--dump-logs-on-failure=false',
        '--node-os-distro=debian', '--system-pods-startup-timeout=1m',
      ],
      { env: { KUBE_TEST_REPO_LIST: repoList }, timeoutMs: 2_500_000, allowFailure: true },
    );
    const seconds = (performance.now() - t0) / 1000;
    await writeFile(join(report, 'e2e.log'), e2e.stdout + e2e.stderr);
    const reportFile = join(report, 'report.json');
    assert.ok(existsSync(reportFile), `ginkgo wrote no report (exit ${e2e.code}); its output ends:\n${(e2e.stdout + e2e.stderr).split('\n').slice(-30).join('\n')}`);
    const { results, failures } = ginkgoResults(await readFile(reportFile, 'utf8'));
    const reference = parseResults(await readFile(join(CONFORMANCE, 'reference-upstream.txt'), 'utf8'), 'reference-upstream.txt');
    for (const name of RESOURCE_TESTS) assert.equal(reference.get(name), 'PASS', `not a test upstream's kubelet passes on the host: ${name}`);
    const here = new Map([...results].filter(([name]) => RESOURCE_TESTS.includes(name)));
    const ran = [...here].filter(([, o]) => o !== 'SKIP').length;
    if (ran < RESOURCE_TESTS.length) process.stderr.write(`      only ${ran} of ${RESOURCE_TESTS.length} ran; ginkgo's output ends:\n${(e2e.stdout + e2e.stderr).split('\n').slice(-40).map((l) => `        ${l}`).join('\n')}\n`);
    const c = compareResults(new Map(RESOURCE_TESTS.map((n) => [n, reference.get(n)!])), here, true);
    process.stderr.write(`      e2e in the guest: ${seconds.toFixed(0)} s; ${formatComparison(c, Object.fromEntries([...failures].map(([n, m]) => [n, { message: m }]))).split('\n').join('\n      ')}\n`);
    assert.deepEqual([...here.keys()].sort(), [...RESOURCE_TESTS].sort(), 'every selected test ran');
    assert.deepEqual(c.regressions, [], `pass with upstream's kubelet on the host, fail on the VM's node: ${c.regressions.map((n) => `\n  ${n}: ${failures.get(n) ?? 'not run'}`).join('')}`);
  });
});
