import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NodeV1Api, type V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../core/runtime/labels.ts';
import { DEFAULT_MASKED_PATHS } from '../../core/pod/security-context.ts';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { buildImage, type NodeEnv } from '../../tools/node-env/index.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { waitFor } from '../support/wait-for.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

/** The content lines of a CRI log file (`<time> <stream> <tag> <text>`). */
async function logText(file: string): Promise<string> {
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => l.split(' ').slice(3).join(' ')).join('\n');
}

/** `Key:\tvalue` lines of /proc/self/status as the container printed them. */
function statusField(log: string, key: string): string | undefined {
  return new RegExp(`^${key}:\\s*(.*)$`, 'm').exec(log)?.[1]?.trim();
}

/** The host's bounding set: what a privileged container gets. */
async function hostCapBnd(): Promise<string> {
  return statusField(await fs.readFile('/proc/self/status', 'utf8'), 'CapBnd')!;
}

/** Builds a busybox image whose config has a `User`, pushes it to the environment's registry. */
async function userImage(env: NodeEnv, tag: string, user: string): Promise<string> {
  const cacheDir = env.imageCacheDir;
  const built = await buildImage({ repository: 'kubelet-ts/busybox-user', tag, cmd: ['sh'], user }, { cacheDir });
  const ref = `${env.registry}/kubelet-ts/busybox-user:${tag}`;
  await env.registryServer.pushImage(built.tarPath, ref);
  return ref;
}

const PROC_STATUS = 'grep -E "^(Uid|Gid|Groups|CapEff|NoNewPrivs|Seccomp):" /proc/self/status';
/** A mountinfo line whose mount point is one of upstream's masked paths. */
const MASKED = ` (${DEFAULT_MASKED_PATHS.join('|')}) `;

/**
 * Security contexts on containerd, observed from inside the containers: users and groups,
 * capabilities, no_new_privs, seccomp, a read-only root, fsGroup on volumes, privileged,
 * masked /proc, sysctls; the refusals (runAsNonRoot, unknown capabilities, a missing seccomp
 * profile, procMount Unmasked, unsafe sysctls, AppArmor); activeDeadlineSeconds; termination
 * messages (file, log fallback, a symlink planted on the host); RuntimeClass handlers.
 */
describe('security contexts on containerd', function () {
  this.timeout(180_000);
  let env: NodeEnv;
  let t: TestKubelet;
  let cri: CriClient;
  let uid1000: string;
  let named: string;
  const ns = 'sc-test';

  before(async function () {
    this.timeout(240_000);
    env = await nodeEnvOrSkip(this);
    cri = new CriClient(env.containerdEndpoint);
    [uid1000, named] = await Promise.all([userImage(env, 'uid1000', '1000'), userImage(env, 'named', 'nobody')]);
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]],
      config: { allowedUnsafeSysctls: ['kernel.msgmax'], runtimeClassHandlers: { 'sc-runc': 'runc' } },
    });
    // A Localhost seccomp profile under <rootDir>/seccomp that refuses mkdir(2) and nothing else.
    const profiles = path.join(t.config.rootDir, 'seccomp', 'sc');
    await fs.mkdir(profiles, { recursive: true });
    await fs.writeFile(path.join(profiles, 'no-mkdir.json'), JSON.stringify({
      defaultAction: 'SCMP_ACT_ALLOW',
      architectures: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_AARCH64'],
      syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }],
    }));
  });

  after(async () => {
    await t?.dispose();
    cri?.close();
  });

  const manifests: string[] = [];
  afterEach(async () => {
    for (const f of manifests.splice(0)) await t.removeManifest(f);
    await t.waitForPod('', () => t.kubelet.pods().every((p) => !p.metadata?.name?.startsWith('sc-')), 60_000, 'every sc- pod removed').catch(() => {});
  });

  /** Writes a static pod `sc-<name>` in the test namespace. */
  async function run(name: string, containers: object[], spec: object = {}, metadata: object = {}): Promise<void> {
    manifests.push(`${name}.json`);
    await t.writeManifest(`${name}.json`, podManifest(name, containers, { terminationGracePeriodSeconds: 1, ...spec }, { namespace: ns, ...metadata }));
  }
  const sh = (script: string, extra: object = {}, name = 'main') => ({ name, image: env.images.busybox, command: ['sh', '-c', script], ...extra });
  const done = (p: V1Pod | undefined) => p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed';
  /** Runs a one-shot pod to its end and returns its pod and its container's output. */
  async function output(name: string, container: object, spec: object = {}, metadata: object = {}): Promise<{ pod: V1Pod; log: string }> {
    await run(name, [container], { restartPolicy: 'Never', ...spec }, metadata);
    const pod = (await t.waitForPod(name, done, 40_000, 'finished'))!;
    const c = (container as { name: string }).name;
    const log = await logText(path.join(t.config.podLogsDir, `${ns}_${name}-test-node_${pod.metadata!.uid}`, c, '0.log'));
    return { pod, log };
  }
  /** Waits until the pod's container waits with `reason`, and returns its message. */
  async function waitingMessage(name: string, reason: string): Promise<string> {
    const pod = await t.waitForPod(name, (p) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === reason, 30_000, reason);
    return pod!.status!.containerStatuses![0]!.state!.waiting!.message ?? '';
  }
  async function containersOf(name: string): Promise<number> {
    const uid = t.pod(name)!.metadata!.uid!;
    const r = await cri.callRuntime<{ containers?: unknown[] }>('ListContainers', { filter: { labelSelector: { [LABEL.podUID]: uid } } }, 10_000);
    return (r.containers ?? []).length;
  }

  it('runAsNonRoot: an image that runs as root, or as a user name, is refused and never started; a numeric non-root image runs', async () => {
    const nonRoot = { securityContext: { runAsNonRoot: true } };
    await run('sc-nonroot-root', [sh('id', nonRoot)]);
    await run('sc-nonroot-named', [{ name: 'main', image: named, command: ['sh', '-c', 'id'], ...nonRoot }]);
    const ok = output('sc-nonroot-ok', { name: 'main', image: uid1000, command: ['sh', '-c', 'id -u'], ...nonRoot });
    const root = await waitingMessage('sc-nonroot-root', 'CreateContainerConfigError');
    const uid = t.pod('sc-nonroot-root')!.metadata!.uid;
    assert.equal(root, `container has runAsNonRoot and image will run as root (pod: "sc-nonroot-root-test-node_${ns}(${uid})", container: main)`);
    const nameMsg = await waitingMessage('sc-nonroot-named', 'CreateContainerConfigError');
    assert.match(nameMsg, /^container has runAsNonRoot and image has non-numeric user \(nobody\), cannot verify user is non-root \(pod: /);
    assert.equal(t.pod('sc-nonroot-root')!.status!.phase, 'Pending');
    assert.equal(await containersOf('sc-nonroot-root'), 0, 'no container was created');
    assert.equal(await containersOf('sc-nonroot-named'), 0, 'no container was created');
    const events = t.kubelet.events.list().filter((e) => e.involvedObject.name === 'sc-nonroot-root-test-node' && e.reason === 'Failed');
    assert.ok(events.some((e) => e.message === `Error: ${root}`), 'a Failed event with the message');
    const { pod, log } = await ok;
    assert.equal(pod.status!.phase, 'Succeeded');
    assert.equal(log.trim(), '1000', 'the image user ran it');
  });

  it('runAsUser, runAsGroup, supplementalGroups and fsGroup are the process credentials', async () => {
    const { log } = await output('sc-ids', sh(`${PROC_STATUS}; echo "id=$(id -u) $(id -g) [$(id -G)]"`), {
      securityContext: { runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000, 5000], fsGroup: 2000 },
    });
    assert.equal(statusField(log, 'Uid')!.split(/\s+/)[0], '1000');
    assert.equal(statusField(log, 'Gid')!.split(/\s+/)[0], '3000');
    // fsGroup, then supplementalGroups; containerd adds the primary group to the list.
    assert.deepEqual(statusField(log, 'Groups')!.split(/\s+/).sort(), ['2000', '3000', '4000', '5000']);
    assert.match(log, /^id=1000 3000 \[/m);
    // A container's own runAsUser wins over the pod's.
    const own = await output('sc-ids-own', sh('id -u', { securityContext: { runAsUser: 2222 } }), { securityContext: { runAsUser: 1000 } });
    assert.equal(own.log.trim(), '2222');
  });

  it('capabilities, no_new_privs and privileged are what the process gets', async () => {
    const [dropAll, netAdmin, prefixed, nnp, dflt, priv] = await Promise.all([
      output('sc-cap-none', sh(PROC_STATUS, { securityContext: { capabilities: { drop: ['ALL'] } } })),
      output('sc-cap-net', sh(PROC_STATUS, { securityContext: { capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } } })),
      output('sc-cap-prefix', sh(PROC_STATUS, { securityContext: { capabilities: { drop: ['ALL'], add: ['CAP_NET_ADMIN'] } } })),
      output('sc-nnp', sh(PROC_STATUS, { securityContext: { allowPrivilegeEscalation: false } })),
      output('sc-default', sh(PROC_STATUS)),
      output('sc-priv', sh(PROC_STATUS, { securityContext: { privileged: true } })),
    ]);
    assert.equal(statusField(dropAll.log, 'CapEff'), '0000000000000000');
    assert.equal(statusField(netAdmin.log, 'CapEff'), '0000000000001000', 'CAP_NET_ADMIN is bit 12');
    assert.equal(statusField(prefixed.log, 'CapEff'), '0000000000001000', 'the CAP_ spelling works too');
    assert.equal(statusField(nnp.log, 'NoNewPrivs'), '1');
    assert.equal(statusField(dflt.log, 'NoNewPrivs'), '0', 'escalation is allowed unless explicitly refused');
    assert.equal(statusField(priv.log, 'CapEff'), await hostCapBnd(), 'privileged: every capability of the host');

    await run('sc-cap-bogus', [sh('true', { securityContext: { capabilities: { add: ['BOGUS'] } } })]);
    assert.match(await waitingMessage('sc-cap-bogus', 'CreateContainerConfigError'), /unknown capability "BOGUS"/);
  });

  it('seccomp: RuntimeDefault filters, Unconfined (and unset) does not, Localhost loads the node profile, a missing one is a clear error', async () => {
    const [rd, podLevel, unconfined, unset, local] = await Promise.all([
      output('sc-seccomp-rd', sh(PROC_STATUS, { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } })),
      output('sc-seccomp-pod', sh(PROC_STATUS), { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }),
      output('sc-seccomp-unc', sh(PROC_STATUS, { securityContext: { seccompProfile: { type: 'Unconfined' } } }), { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }),
      output('sc-seccomp-unset', sh(PROC_STATUS)),
      output('sc-seccomp-local', sh(`${PROC_STATUS}; mkdir /tmp/d 2>&1 || echo mkdir-refused`, { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'sc/no-mkdir.json' } } })),
    ]);
    assert.equal(statusField(rd.log, 'Seccomp'), '2');
    assert.equal(statusField(podLevel.log, 'Seccomp'), '2', 'the pod-level profile applies to its containers');
    assert.equal(statusField(unconfined.log, 'Seccomp'), '0', 'the container-level profile wins over the pod-level one');
    assert.equal(statusField(unset.log, 'Seccomp'), '0');
    assert.equal(statusField(local.log, 'Seccomp'), '2');
    assert.match(local.log, /mkdir-refused/);

    await run('sc-seccomp-missing', [sh('true', { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'sc/missing.json' } } })]);
    const msg = await waitingMessage('sc-seccomp-missing', 'CreateContainerConfigError');
    assert.equal(msg, `container main: seccomp profile ${path.join(t.config.rootDir, 'seccomp', 'sc', 'missing.json')} does not exist (Localhost profiles are read from ${path.join(t.config.rootDir, 'seccomp')} on the node)`);
    await run('sc-seccomp-escape', [sh('true', { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: '../../etc/passwd' } } })]);
    assert.match(await waitingMessage('sc-seccomp-escape', 'CreateContainerConfigError'), /must be a relative path without '\.\.'/);
  });

  it('readOnlyRootFilesystem, masked /proc (procMount Default) and a refused procMount Unmasked', async () => {
    const [ro, masked, priv] = await Promise.all([
      output('sc-rootfs-ro', sh('touch /x 2>&1 && echo wrote || echo refused; touch /tmp/y 2>&1; echo tmp=$?', { securityContext: { readOnlyRootFilesystem: true } })),
      output('sc-proc', sh(`grep -cE '${MASKED}' /proc/self/mountinfo; grep ' /proc/sys ' /proc/self/mountinfo | grep -c ' ro[, ]'`)),
      output('sc-proc-priv', sh(`grep -cE '${MASKED}' /proc/self/mountinfo`, { securityContext: { privileged: true } })),
    ]);
    assert.match(ro.log, /Read-only file system/);
    assert.match(ro.log, /refused/);
    // The runtime masks those of upstream's paths that exist on this kernel.
    const present = (await Promise.all(DEFAULT_MASKED_PATHS.map((p) => fs.stat(p).then(() => 1, () => 0)))).reduce((a: number, b) => a + b, 0);
    assert.ok(present > 0, 'this kernel has some of the masked paths');
    assert.deepEqual(masked.log.trim().split('\n'), [String(present), '1'], 'the default paths are masked and /proc/sys is read-only');
    assert.equal(priv.log.trim(), '0', 'a privileged container sees an unmasked /proc');

    await run('sc-proc-unmasked', [sh('true', { securityContext: { procMount: 'Unmasked' } })]);
    assert.match(await waitingMessage('sc-proc-unmasked', 'CreateContainerConfigError'), /procMount Unmasked cannot be honoured/);
  });

  it('fsGroup: emptyDir and downwardAPI files belong to the group, a non-root member writes and reads them', async () => {
    const { pod, log } = await output('sc-fsgroup', sh('stat -c "%g %A" /data; touch /data/f && stat -c "new %g" /data/f; cat /info/name; echo; stat -c "info %g %a" /info/..data/name', {
      volumeMounts: [{ name: 'data', mountPath: '/data' }, { name: 'info', mountPath: '/info' }],
    }), {
      securityContext: { runAsUser: 1000, fsGroup: 2000 },
      volumes: [{ name: 'data', emptyDir: {} }, { name: 'info', downwardAPI: { defaultMode: 0o400, items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } }],
    });
    assert.equal(pod.status!.phase, 'Succeeded', log);
    const lines = log.trim().split('\n');
    assert.equal(lines[0], '2000 drwxrwsrwx', 'the emptyDir: group fsGroup, setgid');
    assert.equal(lines[1], 'new 2000', 'a file made by uid 1000 gets the group');
    assert.equal(lines[2], 'sc-fsgroup-test-node', 'uid 1000 reads a 0400 file through its group');
    assert.equal(lines[3], 'info 2000 440');
  });

  it('sysctls: safe and allowed unsafe ones are applied, others reject the pod (SysctlForbidden)', async () => {
    const { log } = await output('sc-sysctl', sh('cat /proc/sys/net/ipv4/ip_local_port_range /proc/sys/kernel/msgmax'), {
      securityContext: { sysctls: [{ name: 'net.ipv4.ip_local_port_range', value: '1024 65000' }, { name: 'kernel.msgmax', value: '12345' }] },
    });
    assert.deepEqual(log.trim().split('\n').map((l) => l.split(/\s+/).join(' ')), ['1024 65000', '12345']);

    await run('sc-sysctl-unsafe', [sh('sleep 60')], { securityContext: { sysctls: [{ name: 'kernel.shmmax', value: '1000000' }] } });
    await run('sc-sysctl-hostnet', [sh('sleep 60')], { hostNetwork: true, securityContext: { sysctls: [{ name: 'net.ipv4.tcp_syncookies', value: '0' }] } });
    const unsafe = (await t.waitForPod('sc-sysctl-unsafe', (p) => p?.status?.phase === 'Failed', 20_000, 'Failed'))!;
    assert.equal(unsafe.status!.reason, 'SysctlForbidden');
    assert.equal(unsafe.status!.message, 'forbidden sysctl: "kernel.shmmax" not allowlisted');
    const hostnet = (await t.waitForPod('sc-sysctl-hostnet', (p) => p?.status?.phase === 'Failed', 20_000, 'Failed'))!;
    assert.equal(hostnet.status!.message, 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled');
    await sleep(1500);
    assert.equal(await containersOf('sc-sysctl-unsafe'), 0, 'a rejected pod never starts');
  });

  it('AppArmor: a profile is refused where it cannot be enforced', async () => {
    await run('sc-apparmor', [sh('sleep 60')], {}, { annotations: { 'container.apparmor.security.beta.kubernetes.io/main': 'runtime/default' } });
    const hostHasAppArmor = await fs.readFile('/sys/module/apparmor/parameters/enabled', 'utf8').then((s) => s.startsWith('Y'), () => false);
    if (hostHasAppArmor) {
      // The host has it, the test containerd runs with disable_apparmor: the runtime refuses.
      assert.match(await waitingMessage('sc-apparmor', 'CreateContainerError'), /apparmor/i);
    } else {
      const p = (await t.waitForPod('sc-apparmor', (x) => x?.status?.phase === 'Failed', 20_000, 'Failed'))!;
      assert.equal(p.status!.reason, 'AppArmor');
      assert.equal(p.status!.message, 'Cannot enforce AppArmor: AppArmor is not enabled on the host');
    }
  });

  it('activeDeadlineSeconds: the pod is Failed with DeadlineExceeded at its deadline and its containers killed', async () => {
    await run('sc-deadline', [sh("trap 'exit 0' TERM; while true; do sleep 0.2; done")], { activeDeadlineSeconds: 3, terminationGracePeriodSeconds: 2 });
    let failedAt = 0;
    const pod = (await t.waitForPod('sc-deadline', (p) => {
      if (p?.status?.phase === 'Failed' && !failedAt) failedAt = Date.now();
      return p?.status?.phase === 'Failed' && !!p.status.containerStatuses?.[0]?.state?.terminated;
    }, 20_000, 'Failed and killed'))!;
    const took = failedAt - new Date(pod.status!.startTime!).getTime();
    assert.ok(took >= 3000 && took <= 5000, `Failed ${took} ms after the pod started (deadline 3 s)`);
    assert.equal(pod.status!.reason, 'DeadlineExceeded');
    assert.equal(pod.status!.message, 'Pod was active on the node longer than the specified deadline');
    assert.ok(t.kubelet.events.list().some((e) => e.involvedObject.name === 'sc-deadline-test-node' && e.reason === 'DeadlineExceeded' && e.type === 'Normal'));
    await sleep(1500);
    const later = t.pod('sc-deadline')!;
    assert.equal(later.status!.phase, 'Failed', 'stays Failed');
    assert.equal(later.status!.containerStatuses![0]!.restartCount, 0, 'never restarted');
    assert.equal(later.status!.containerStatuses![0]!.state?.running, undefined);
  });

  it('termination messages: the file, bounded; FallbackToLogsOnError; a non-root writer at a custom path', async () => {
    const lines = 'for i in $(seq 1 100); do echo line$i; done';
    const [file, big, fallback, fallbackOk, fileWins, custom] = await Promise.all([
      output('sc-tm-file', sh('printf bye > /dev/termination-log; exit 3')),
      output('sc-tm-big', sh('head -c 10000 /dev/zero | tr "\\0" a > /dev/termination-log; printf END >> /dev/termination-log')),
      output('sc-tm-fallback', sh(`${lines}; exit 1`, { terminationMessagePolicy: 'FallbackToLogsOnError' })),
      output('sc-tm-fallback-ok', sh(`${lines}; exit 0`, { terminationMessagePolicy: 'FallbackToLogsOnError' })),
      output('sc-tm-file-wins', sh(`${lines}; printf from-file > /dev/termination-log; exit 1`, { terminationMessagePolicy: 'FallbackToLogsOnError' })),
      output('sc-tm-custom', sh('id -u > /tmp/msg', { terminationMessagePath: '/tmp/msg', securityContext: { runAsUser: 1000 } })),
    ]);
    const term = (p: V1Pod) => p.status!.containerStatuses![0]!.state!.terminated!;
    assert.equal(term(file.pod).message, 'bye');
    assert.equal(term(file.pod).exitCode, 3);
    assert.equal(term(big.pod).message!.length, 4096, 'at most 4096 bytes');
    assert.ok(term(big.pod).message!.endsWith('aEND'), 'the last bytes');
    const expected = Array.from({ length: 80 }, (_, i) => `line${i + 21}\n`).join('');
    assert.equal(term(fallback.pod).message, expected, 'the last 80 lines of the log');
    assert.equal(term(fallbackOk.pod).message, undefined, 'no fallback on success');
    assert.equal(term(fileWins.pod).message, 'from-file');
    assert.equal(term(custom.pod).message, '1000\n');
  });

  it('termination messages: a symlink planted at the message file is not followed', async () => {
    const secret = path.join(t.dir, 'host-secret');
    await fs.writeFile(secret, 'HOST-SECRET');
    await run('sc-tm-link', [sh('sleep 2; exit 1')], { restartPolicy: 'Never' });
    const pod = (await t.waitForPod('sc-tm-link', (p) => !!p?.status?.containerStatuses?.[0]?.state?.running, 20_000, 'Running'))!;
    const dir = path.join(t.config.rootDir, 'pods', pod.metadata!.uid!, 'containers', 'main');
    const [name] = await fs.readdir(dir);
    assert.match(name!, /^[0-9a-f]{8}$/, 'one file per instance, named as upstream');
    // What a container with the host's pod dir mounted could do: swap the file for a link to a host file.
    await fs.rm(path.join(dir, name!));
    await fs.symlink(secret, path.join(dir, name!));
    const ended = (await t.waitForPod('sc-tm-link', (p) => p?.status?.phase === 'Failed', 20_000, 'Failed'))!;
    const msg = ended.status!.containerStatuses![0]!.state!.terminated!.message ?? '';
    assert.ok(!msg.includes('HOST-SECRET'), `the host file was not read: ${msg}`);
    assert.match(msg, /^Error on reading termination log .*: it is a symbolic link, which is not followed$/);
  });

  it('runtimeClassName: a known class runs with its handler; an unknown one waits with an error and an event', async () => {
    await run('sc-rc', [sh('sleep 60')], { runtimeClassName: 'sc-runc' });
    await run('sc-rc-unknown', [sh('sleep 60')], { runtimeClassName: 'sc-nope' });
    const pod = (await t.waitForPod('sc-rc', (p) => p?.status?.phase === 'Running', 30_000, 'Running'))!;
    const sbs = await cri.callRuntime<{ items?: Array<{ runtimeHandler?: string }> }>('ListPodSandbox', { filter: { labelSelector: { [LABEL.podUID]: pod.metadata!.uid! } } }, 10_000);
    assert.deepEqual((sbs.items ?? []).map((s) => s.runtimeHandler), ['runc']);
    const msg = await waitingMessage('sc-rc-unknown', 'ContainerCreating');
    assert.equal(msg, `Failed to create pod sandbox: runtimeclass.node.k8s.io "sc-nope" not found: without an API server, RuntimeClasses come from runtimeClassHandlers in the kubelet's config`);
    assert.ok(t.kubelet.events.list().some((e) => e.involvedObject.name === 'sc-rc-unknown-test-node' && e.reason === 'FailedCreatePodSandBox'));
  });
});

/** RuntimeClass objects read from a real API server by the node's own identity. */
describe('RuntimeClass from the API server', function () {
  this.timeout(180_000);
  const suite = clusterSuite('kts-sc-rc-');
  let node: NodeV1Api;
  before(function () {
    if (suite.cp) node = suite.cp.admin.makeApiClient(NodeV1Api);
  });

  it('an unknown class: the pod waits with the error and an event; once the class exists it runs with its handler', async function () {
    const n = suite.node('sc-rc');
    const name = n.name;
    const rc = suite.uniqueName('rc');
    const ns = await suite.namespace('sc-rc');
    // The API server's RuntimeClass admission refuses a pod whose class does not exist: the pod
    // is created while it does, and the class is deleted before this node's kubelet starts.
    await node.createRuntimeClass({ body: { metadata: { name: rc }, handler: 'runc' } });
    suite.onCleanup(() => node.deleteRuntimeClass({ name: rc }));
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'sc-rc-api' },
        spec: {
          nodeName: name, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, runtimeClassName: rc,
          containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] }],
        },
      },
    });
    await node.deleteRuntimeClass({ name: rc });
    await suite.kubelet(n);
    // The pod goes before this kubelet's cleanup waits for its pods: the namespace, made before
    // the kubelet, is deleted only after that cleanup.
    suite.onCleanup(() => suite.core.deleteNamespacedPod({ name: 'sc-rc-api', namespace: ns }).catch(() => {}));
    const expected = `Failed to create pod sandbox: runtimeclasses.node.k8s.io "${rc}" not found`;
    const waiting = await waitFor('the pod waits with the error', async () => {
      const p = await suite.core.readNamespacedPod({ name: 'sc-rc-api', namespace: ns });
      return p.status?.containerStatuses?.[0]?.state?.waiting?.message === expected && p;
    });
    assert.equal(waiting.status?.phase, 'Pending');
    assert.equal(waiting.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    const events = await waitFor('FailedCreatePodSandBox event', async () => {
      const list = (await suite.core.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.involvedObject?.name === 'sc-rc-api' && e.reason === 'FailedCreatePodSandBox');
      return list.length > 0 && list;
    }, 30_000);
    assert.equal(events[0]!.message, expected);

    // The node identity reads RuntimeClasses (the Node authorizer's static node rules allow get):
    // once the class exists, the retried sync creates the sandbox with its handler.
    await node.createRuntimeClass({ body: { metadata: { name: rc }, handler: 'runc' } });
    const running = await waitFor('pod Running once the class exists', async () => {
      const p = await suite.core.readNamespacedPod({ name: 'sc-rc-api', namespace: ns });
      return p.status?.phase === 'Running' && p;
    }, 90_000);
    const cri = new CriClient(suite.env.containerdEndpoint);
    try {
      const sbs = await cri.callRuntime<{ items?: Array<{ runtimeHandler?: string; state?: string }> }>('ListPodSandbox', { filter: { labelSelector: { [LABEL.podUID]: running.metadata!.uid! } } }, 10_000);
      assert.deepEqual((sbs.items ?? []).map((s) => s.runtimeHandler), ['runc'], 'the sandbox runs with the class handler');
    } finally {
      cri.close();
    }
  });
});
