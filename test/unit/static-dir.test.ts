import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { silentLogger } from '../../core/logger.ts';
import { captureLogger as captureLines } from '../support/capture-logger.ts';
import { StaticPodDirSource, isIgnoredManifestName } from '../../core/sources/static-dir.ts';
import { CONFIG_SEEN_ANNOTATION } from '../../core/objects/pod-origin.ts';

const NODE = 'node-a';

function manifest(name: string, image = 'busybox:1.36', extra = ''): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
  - name: main
    image: ${image}
    command: ["sleep", "3600"]
${extra}`;
}

interface LogLine {
  level: number;
  msg: string;
  file?: string;
  conflictsWith?: string;
  err?: string;
  reason?: string;
  keptPod?: string;
}

const captureLogger = () => captureLines<LogLine>();

async function waitFor(cond: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Lets closed handles leave the event loop (uv_close completes on the next turn). */
const settle = () => new Promise((r) => setTimeout(r, 20));

const names = (pods: V1Pod[] | undefined): string[] => (pods ?? []).map((p) => p.metadata!.name!).sort();

describe('StaticPodDirSource', function () {
  this.timeout(10000);
  let tmp: string;
  let dir: string;
  const sources: StaticPodDirSource[] = [];

  function newSource(opts: Partial<ConstructorParameters<typeof StaticPodDirSource>[0]> = {}) {
    const emissions: V1Pod[][] = [];
    const source = new StaticPodDirSource({ dir, nodeName: NODE, rescanPeriodMs: 60_000, logger: silentLogger(), ...opts });
    sources.push(source);
    const last = () => emissions[emissions.length - 1];
    return { source, emissions, last, start: () => source.start((pods) => emissions.push(pods)) };
  }

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'kubelet-ts-static-'));
    dir = path.join(tmp, 'manifests');
    await fs.mkdir(dir);
  });

  afterEach(async () => {
    await Promise.all(sources.splice(0).map((s) => s.stop()));
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('emits the initial set, even when empty', async () => {
    const s = newSource();
    await s.start();
    assert.equal(s.emissions.length, 1);
    assert.deepEqual(s.emissions[0], []);
  });

  it('reads every non-hidden regular file with static pod treatment', async () => {
    await fs.writeFile(path.join(dir, 'web.yaml'), manifest('web'));
    await fs.writeFile(path.join(dir, 'api.json'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'api' }, spec: { containers: [{ name: 'c', image: 'x' }] } }));
    await fs.writeFile(path.join(dir, 'noext'), manifest('noext'));
    await fs.writeFile(path.join(dir, '.hidden.yaml'), manifest('hidden'));
    await fs.writeFile(path.join(dir, 'web.yaml~'), manifest('backup'));
    await fs.writeFile(path.join(dir, '.web.yaml.swp'), 'binary junk');
    await fs.mkdir(path.join(dir, 'sub'));
    await fs.writeFile(path.join(dir, 'sub', 'nested.yaml'), manifest('nested'));
    const s = newSource();
    await s.start();
    assert.deepEqual(names(s.last()), ['api-node-a', 'noext-node-a', 'web-node-a']);
    const web = s.last()!.find((p) => p.metadata!.name === 'web-node-a')!;
    assert.equal(web.spec?.nodeName, NODE);
    assert.equal(web.metadata?.namespace, 'default');
    assert.equal(web.spec?.restartPolicy, 'Always');
    assert.equal(web.spec?.containers[0]?.imagePullPolicy, 'IfNotPresent');
    assert.equal(web.metadata?.annotations?.['kubernetes.io/config.source'], 'file');
    assert.equal(web.metadata?.annotations?.['kubernetes.io/config.hash'], web.metadata?.uid);
    assert.deepEqual(s.source.errors(), new Map());
  });

  it('detects add, modify and delete within 2 s through the directory watch', async () => {
    const s = newSource(); // 60 s rescan: only the watch can be this fast
    await s.start();
    const file = path.join(dir, 'web.yaml');

    await fs.writeFile(file, manifest('web'));
    await waitFor(() => names(s.last()).includes('web-node-a'), 'added pod');
    const uid1 = s.last()![0]!.metadata!.uid;

    await fs.writeFile(file, manifest('web', 'busybox:1.37'));
    await waitFor(() => s.last()![0]?.spec?.containers[0]?.image === 'busybox:1.37', 'modified pod');
    const uid2 = s.last()![0]!.metadata!.uid;
    assert.notEqual(uid2, uid1, 'an edited manifest gets a new UID');

    await fs.rm(file);
    await waitFor(() => s.last()!.length === 0, 'deleted pod');
  });

  it('picks up a file replaced by rename (editor-style atomic save)', async () => {
    const file = path.join(dir, 'web.yaml');
    await fs.writeFile(file, manifest('web'));
    const s = newSource();
    await s.start();
    await fs.writeFile(path.join(dir, '.web.yaml.tmp'), manifest('web', 'busybox:2'));
    await fs.rename(path.join(dir, '.web.yaml.tmp'), file);
    await waitFor(() => s.last()![0]?.spec?.containers[0]?.image === 'busybox:2', 'renamed-over manifest');
  });

  it('reports an invalid manifest once with its file name and keeps the other pods; a broken edit keeps the pod of the last valid content', async () => {
    const { logger, lines } = captureLogger();
    await fs.writeFile(path.join(dir, 'good.yaml'), manifest('good'));
    const bad = path.join(dir, 'bad.yaml');
    await fs.writeFile(bad, 'apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n');
    const s = newSource({ logger });
    await s.start();
    assert.deepEqual(names(s.last()), ['good-node-a']);
    const errs = s.source.errors();
    assert.deepEqual([...errs.keys()], [bad]);
    assert.match(errs.get(bad)!, /bad\.yaml: not valid YAML/);

    await s.source.rescan();
    await s.source.rescan();
    const warnings = lines.filter((l) => l.level === 40 && l.file === bad);
    assert.equal(warnings.length, 1, 'logged once per change, not on every rescan');
    assert.match(warnings[0]!.err ?? '', /bad\.yaml/);
    assert.equal(s.emissions.length, 1, 'nothing changed, nothing emitted');

    // Fixing it makes the pod appear and clears the error.
    await fs.writeFile(bad, manifest('bad'));
    await waitFor(() => names(s.last()).includes('bad-node-a'), 'fixed manifest');
    assert.equal(s.source.errors().size, 0);
    assert.deepEqual(names(s.last()), ['bad-node-a', 'good-node-a']);

    // Breaking it again is logged again (a new change), and its pod keeps running as last read.
    const uid = s.last()!.find((p) => p.metadata!.name === 'bad-node-a')!.metadata!.uid;
    await fs.writeFile(bad, manifest('bad').replace('kind: Pod', 'kind: Service'));
    await waitFor(() => s.source.errors().has(bad), 'broken again');
    assert.match(s.source.errors().get(bad)!, /kind is "Service"/);
    assert.deepEqual(names(s.last()), ['bad-node-a', 'good-node-a']);
    assert.equal(s.last()!.find((p) => p.metadata!.name === 'bad-node-a')!.metadata!.uid, uid);
    const broken = lines.filter((l) => l.level === 40 && l.file === bad);
    assert.equal(broken.length, 2);
    assert.equal(broken[1]!.keptPod, uid);
    // Removing the broken file removes its pod.
    await fs.rm(bad);
    await waitFor(() => names(s.last()).length === 1, 'pod of the removed file gone');
  });

  it('derives the same UIDs in two source instances (restart) and keeps them on touch', async () => {
    await fs.writeFile(path.join(dir, 'a.yaml'), manifest('a'));
    await fs.writeFile(path.join(dir, 'b.yaml'), manifest('b', 'nginx'));
    const first = newSource();
    await first.start();
    const uids1 = first.last()!.map((p) => p.metadata!.uid).sort();
    await first.source.stop();
    const second = newSource();
    await second.start();
    const uids2 = second.last()!.map((p) => p.metadata!.uid).sort();
    assert.deepEqual(uids2, uids1);
    assert.equal(uids1.length, 2);
    for (const u of uids1) assert.match(u!, /^[0-9a-f]{32}$/);

    // Same content rewritten (in place: read once it has settled): same UIDs, no emission, same seen time.
    const seen = second.last()!.map((p) => p.metadata!.annotations![CONFIG_SEEN_ANNOTATION]);
    await new Promise((r) => setTimeout(r, 20));
    await fs.writeFile(path.join(dir, 'a.yaml'), manifest('a'));
    await new Promise((r) => setTimeout(r, 500));
    await second.source.rescan();
    assert.equal(second.emissions.length, 1);
    // An edit does change the set, and the untouched pod keeps its seen time.
    await fs.writeFile(path.join(dir, 'a.yaml'), manifest('a', 'busybox:9'));
    await waitFor(() => second.emissions.length === 2, 'the edit');
    const b = second.last()!.find((p) => p.metadata!.name === 'b-node-a')!;
    assert.equal(b.metadata!.annotations![CONFIG_SEEN_ANNOTATION], seen[1]);
    assert.notDeepEqual(second.last()!.map((p) => p.metadata!.uid).sort(), uids1);
  });

  it('keeps the first file by name when two declare the same pod', async () => {
    const { logger, lines } = captureLogger();
    const a = path.join(dir, 'a.yaml');
    const b = path.join(dir, 'b.yaml');
    await fs.writeFile(a, manifest('dup', 'busybox:a'));
    await fs.writeFile(b, manifest('dup', 'busybox:b'));
    const s = newSource({ logger });
    await s.start();
    assert.equal(s.last()!.length, 1);
    assert.equal(s.last()![0]!.spec?.containers[0]?.image, 'busybox:a');
    assert.match(s.source.errors().get(b)!, /duplicate pod default\/dup-node-a: already declared by .*a\.yaml/);
    const conflict = lines.filter((l) => l.level >= 50 && l.file === b && l.conflictsWith === a);
    assert.equal(conflict.length, 1);
    await s.source.rescan();
    assert.equal(lines.filter((l) => l.level >= 50 && l.file === b).length, 1, 'conflict logged once');

    // Removing the winner lets the other file's pod take over.
    await fs.rm(a);
    await waitFor(() => s.last()![0]?.spec?.containers[0]?.image === 'busybox:b', 'takeover by b.yaml');
    assert.equal(s.source.errors().size, 0);
  });

  it('keeps the pod of the file that was there first: a duplicate added later is the one reported, whatever its name', async () => {
    const { logger, lines } = captureLogger();
    const b = path.join(dir, 'b.yaml');
    const a = path.join(dir, 'a.yaml');
    await fs.writeFile(b, manifest('dup', 'busybox:b'));
    const s = newSource({ logger });
    await s.start();
    await fs.writeFile(path.join(dir, '.a.tmp'), manifest('dup', 'busybox:a'));
    await fs.rename(path.join(dir, '.a.tmp'), a);
    await waitFor(() => s.source.errors().has(a), 'the newcomer reported');
    assert.equal(s.last()![0]!.spec?.containers[0]?.image, 'busybox:b', 'the running pod stays');
    assert.match(s.source.errors().get(a)!, /already declared by .*b\.yaml; ignoring .*a\.yaml/);
    assert.ok(lines.some((l) => l.level >= 50 && l.file === a && l.conflictsWith === b), 'the log names the newcomer and the file it conflicts with');
  });

  it('after a restart, the file whose pod runs keeps it (isRunning), whatever the names', async () => {
    await fs.writeFile(path.join(dir, 'b.yaml'), manifest('dup', 'busybox:b'));
    const first = newSource();
    await first.start();
    const running = first.last()![0]!.metadata!.uid!;
    await first.source.stop();
    await fs.writeFile(path.join(dir, 'a.yaml'), manifest('dup', 'busybox:a'));
    const second = newSource({ isRunning: (uid) => uid === running });
    await second.start();
    assert.equal(second.last()![0]!.metadata!.uid, running);
    assert.ok(second.source.errors().has(path.join(dir, 'a.yaml')));
  });

  it('never turns a half-written file into a pod: an in-place write is read once it is still', async () => {
    // The writer's 120 ms pause must stay shorter than the settle time even when the machine is
    // busy (a starved test process once saw it last longer than a 300 ms settle).
    const s = newSource({ settleMs: 2000 });
    await s.start();
    const file = path.join(dir, 'web.yaml');
    const full = manifest('web', 'busybox:1.36', '  - name: second\n    image: busybox:1.36\n');
    // The first part alone is a valid pod (one container): it must never be emitted.
    const cut = full.indexOf('  - name: second');
    const fh = await fs.open(file, 'w');
    await fh.write(full.slice(0, cut));
    await new Promise((r) => setTimeout(r, 120));
    await fh.write(full.slice(cut));
    await fh.close();
    await waitFor(() => s.last()!.length === 1, 'the pod of the complete file', 10_000);
    assert.equal(s.last()![0]!.spec!.containers.length, 2);
    for (const e of s.emissions) for (const p of e) assert.equal(p.spec!.containers.length, 2, 'a half-written version was emitted');
  });

  it('follows a symlink only to a regular file inside the directory; reports one out of it without reading it', async () => {
    const { logger, lines } = captureLogger();
    const outside = path.join(tmp, 'outside.yaml');
    await fs.writeFile(outside, manifest('outside'));
    await fs.writeFile(path.join(dir, 'real.yaml'), manifest('real'));
    await fs.symlink(outside, path.join(dir, 'out.yaml'));
    await fs.symlink('/proc/self/environ', path.join(dir, 'env.yaml'));
    await fs.symlink('real.yaml', path.join(dir, 'alias.yaml'));
    const s = newSource({ logger });
    await s.start();
    // alias.yaml declares the same pod as real.yaml: one pod, the other file reported.
    assert.deepEqual(names(s.last()), ['real-node-a']);
    for (const f of ['out.yaml', 'env.yaml']) {
      assert.ok(lines.some((l) => l.file === path.join(dir, f) && l.reason === 'symlink to a file outside the manifest directory'), `${f} reported`);
    }
    const text = JSON.stringify(lines);
    assert.ok(!text.includes('PATH='), 'nothing of the environment reached the log');
  });

  it('reports a file name that is not UTF-8 as such', async () => {
    const { logger, lines } = captureLogger();
    const raw = Buffer.concat([Buffer.from(dir + '/bad'), Buffer.from([0xff, 0xfe]), Buffer.from('.yaml')]);
    await fs.writeFile(raw, manifest('latin'));
    const s = newSource({ logger });
    await s.start();
    assert.deepEqual(s.last(), []);
    assert.ok(lines.some((l) => l.file === path.join(dir, 'bad\\xff\\xfe.yaml') && l.reason === 'file name is not valid UTF-8'), JSON.stringify(lines));
  });

  it('refuses a manifest whose content is not UTF-8, as Kubernetes does', async () => {
    const file = path.join(dir, 'latin.yaml');
    await fs.writeFile(file, Buffer.concat([Buffer.from(manifest('latin').replace('busybox:1.36', 'busybox:1.36 #')), Buffer.from([0xe9, 0x0a])]));
    const s = newSource();
    await s.start();
    assert.deepEqual(s.last(), []);
    assert.match(s.source.errors().get(file)!, /latin\.yaml: not valid UTF-8$/);
  });

  it('treats a missing directory as empty and picks it up when it appears', async () => {
    const { logger, lines } = captureLogger();
    dir = path.join(tmp, 'later');
    const s = newSource({ logger });
    await s.start();
    assert.deepEqual(s.emissions, [[]]);
    assert.ok(lines.some((l) => l.level === 40 && /does not exist/.test(l.msg)));

    await fs.mkdir(dir);
    await fs.writeFile(path.join(dir, 'late.yaml'), manifest('late'));
    await waitFor(() => names(s.last()).includes('late-node-a'), 'pod in the new directory');

    // And a directory that is removed again empties the set.
    await fs.rm(dir, { recursive: true });
    await waitFor(() => s.last()!.length === 0, 'empty set after the directory is removed');
    await fs.mkdir(dir);
    await fs.writeFile(path.join(dir, 'again.yaml'), manifest('again'));
    await waitFor(() => names(s.last()).includes('again-node-a'), 'pod in the re-created directory');
  });

  it('rescans periodically as a safety net', async () => {
    const s = newSource({ rescanPeriodMs: 100 });
    await s.start();
    // Simulate a lost watch event: close the watcher behind the source's back.
    (s.source as unknown as { watcher: { close(): void } }).watcher.close();
    await fs.writeFile(path.join(dir, 'web.yaml'), manifest('web'));
    await waitFor(() => names(s.last()).includes('web-node-a'), 'pod found by the periodic rescan');
  });

  it('only emits when the set changed', async () => {
    await fs.writeFile(path.join(dir, 'web.yaml'), manifest('web'));
    const s = newSource({ rescanPeriodMs: 50 });
    await s.start();
    await fs.writeFile(path.join(dir, 'README'), manifest('x').replace('kind: Pod', 'kind: Nope'));
    await fs.writeFile(path.join(dir, '.ignored'), 'whatever');
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(s.emissions.length, 1);
  });

  it('after rescans of an unchanged directory, a changed file is emitted with fresh copies and config.seen kept', async () => {
    await fs.writeFile(path.join(dir, 'web.yaml'), manifest('web'));
    await fs.writeFile(path.join(dir, 'db.yaml'), manifest('db'));
    const s = newSource({ rescanPeriodMs: 30 });
    await s.start();
    const first = s.last()!;
    const seen = first.find((p) => p.metadata!.name === 'web-node-a')!.metadata!.annotations![CONFIG_SEEN_ANNOTATION];
    // What a consumer does to its copy never reaches the source's own pods.
    first.find((p) => p.metadata!.name === 'web-node-a')!.metadata!.labels = { touched: 'by-consumer' };
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(s.emissions.length, 1, 'unchanged rescans emit nothing');
    await fs.writeFile(path.join(dir, 'db.yaml'), manifest('db', 'busybox:1.37'));
    await waitFor(() => s.emissions.length === 2, 'the changed manifest emitted');
    const web = s.last()!.find((p) => p.metadata!.name === 'web-node-a')!;
    assert.equal(web.metadata!.labels?.touched, undefined, 'a fresh copy, not the one handed out before');
    assert.equal(web.metadata!.annotations![CONFIG_SEEN_ANNOTATION], seen, 'config.seen of the unchanged pod kept');
    assert.equal(s.last()!.find((p) => p.metadata!.name === 'db-node-a')!.spec!.containers[0]!.image, 'busybox:1.37');
  });

  it('stop() releases watchers and timers', async () => {
    const before = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap').length;
    const s = newSource({ rescanPeriodMs: 50 });
    await s.start();
    await fs.writeFile(path.join(dir, 'web.yaml'), manifest('web'));
    await waitFor(() => s.last()!.length === 1, 'pod');
    assert.ok(process.getActiveResourcesInfo().length > before);
    await s.source.stop();
    await settle();
    const after = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap').length;
    assert.ok(after <= before, `resources left after stop: ${process.getActiveResourcesInfo().join(',')}`);
    const count = s.emissions.length;
    await fs.writeFile(path.join(dir, 'other.yaml'), manifest('other'));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(s.emissions.length, count, 'no emission after stop');
  });

  it('stop() while the directory is missing releases the parent watch', async () => {
    const before = process.getActiveResourcesInfo().length;
    dir = path.join(tmp, 'missing');
    const s = newSource({ rescanPeriodMs: 50 });
    await s.start();
    await s.source.stop();
    await settle();
    assert.ok(process.getActiveResourcesInfo().length <= before, `resources left after stop: ${process.getActiveResourcesInfo().join(',')}`);
  });
});

describe('isIgnoredManifestName', () => {
  it('skips hidden files and editor leftovers', () => {
    for (const n of ['.x.yaml', '.x.yaml.swp', 'x.yaml~', '#x.yaml#', 'x.yaml.swp']) assert.ok(isIgnoredManifestName(n), n);
    for (const n of ['x.yaml', 'x.yml', 'x.json', 'x', 'kube-apiserver.manifest']) assert.ok(!isIgnoredManifestName(n), n);
  });
});
