import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeletError } from '../../core/errors.ts';
import { loadObjectModels } from '../../core/objects/object-decoder.ts';
import {
  applyStaticPodDefaults,
  canonicalJson,
  defaultPullPolicy,
  parseManifest,
} from '../../core/sources/manifest.ts';
import { CONFIG_HASH_ANNOTATION, CONFIG_MIRROR_ANNOTATION, CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../../core/objects/pod-origin.ts';
import { RICH_POD_YAML } from '../support/rich-pod-manifest.ts';

const FILE = '/etc/kubernetes/manifests/web.yaml';

const WEB_YAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: nginx
    image: nginx:1.25
    ports:
    - containerPort: 80
    resources:
      limits:
        cpu: 1
        memory: 64Mi
`;

const WEB_JSON = JSON.stringify({
  spec: {
    containers: [
      { resources: { limits: { memory: '64Mi', cpu: 1 } }, ports: [{ containerPort: 80 }], image: 'nginx:1.25', name: 'nginx' },
    ],
  },
  metadata: { labels: { app: 'web' }, name: 'web' },
  kind: 'Pod',
  apiVersion: 'v1',
});

function expectInvalid(text: string, pattern: RegExp, file = FILE): void {
  assert.throws(
    () => parseManifest(text, file),
    (err: unknown) => {
      assert.ok(err instanceof KubeletError, `expected KubeletError, got ${String(err)}`);
      assert.equal(err.code, 'InvalidInput');
      assert.ok(err.message.includes(file), `message should name the file: ${err.message}`);
      assert.match(err.message, pattern);
      return true;
    },
  );
}

function pod(spec: string, meta = 'name: p'): string {
  return `apiVersion: v1\nkind: Pod\nmetadata:\n  ${meta}\nspec:\n${spec}`;
}

const opts = { nodeName: 'Node-1', source: 'file', file: FILE };

// parseManifest needs the API models (loaded once, asynchronously) to drop unknown fields.
before(() => loadObjectModels());

describe('manifest: parseManifest', () => {
  it('parses a YAML pod', () => {
    const p = parseManifest(WEB_YAML, FILE);
    assert.equal(p.kind, 'Pod');
    assert.equal(p.metadata?.name, 'web');
    assert.equal(p.spec?.containers[0]?.image, 'nginx:1.25');
  });

  it('parses a JSON pod', () => {
    const p = parseManifest(WEB_JSON, FILE);
    assert.equal(p.metadata?.name, 'web');
    assert.equal(p.spec?.containers.length, 1);
  });

  it('accepts a leading/trailing document separator and comments', () => {
    const p = parseManifest(`# static pod\n---\n${WEB_YAML}---\n# end\n`, FILE);
    assert.equal(p.metadata?.name, 'web');
  });

  it('drops fields the v1 API does not know, at every level, and keeps values as JSON', () => {
    const p = parseManifest(
      pod(
        '  bogusSpecField: 1\n  containers:\n  - name: a\n    image: x\n    imagePullPolicyy: Always\n    env: [{name: E, value: v, extra: 1}]\n    resources: {limits: {cpu: 500m}}',
        'name: p\n  creationTimestamp: "2024-01-02T03:04:05Z"\n  labels: {app: a}\n  surprise: yes',
      ).replace('kind: Pod', 'kind: Pod\nstatusz: {}'),
      FILE,
    );
    const raw = p as unknown as Record<string, any>;
    assert.equal(raw.statusz, undefined);
    assert.equal(raw.metadata.surprise, undefined);
    assert.equal(raw.spec.bogusSpecField, undefined);
    assert.equal(raw.spec.containers[0].imagePullPolicyy, undefined);
    assert.deepEqual(raw.spec.containers[0].env, [{ name: 'E', value: 'v' }]);
    // Maps keep every key; quantities and timestamps stay as written.
    assert.deepEqual(raw.metadata.labels, { app: 'a' });
    assert.deepEqual(raw.spec.containers[0].resources, { limits: { cpu: '500m' } });
    assert.equal(raw.metadata.creationTimestamp, '2024-01-02T03:04:05Z');
  });
  it('names a field of the wrong shape instead of coercing it', () => expectInvalid(pod('  containers: nginx'), /spec\.containers/));
  it('rejects text that is not YAML', () => expectInvalid('apiVersion: v1\nkind: [Pod\n', /not valid YAML/));
  it('rejects an empty file', () => expectInvalid('\n# nothing\n', /empty/));
  it('rejects a scalar document', () => expectInvalid('hello', /expected a Pod object/));
  it('rejects another kind', () => expectInvalid(WEB_YAML.replace('kind: Pod', 'kind: Deployment'), /kind is "Deployment", expected Pod/));
  it('rejects a missing kind', () => expectInvalid(WEB_YAML.replace('kind: Pod\n', ''), /Kind' is missing/));
  it('rejects a wrong apiVersion', () => expectInvalid(WEB_YAML.replace('apiVersion: v1', 'apiVersion: apps/v1'), /apiVersion is "apps\/v1"/));
  it('rejects more than one document', () => expectInvalid(`${WEB_YAML}---\n${WEB_YAML}`, /2 YAML documents/));
  it('rejects a missing metadata.name', () => expectInvalid(WEB_YAML.replace('  name: web\n', ''), /metadata\.name: Required/));
  it('rejects an invalid name', () => expectInvalid(WEB_YAML.replace('name: web', 'name: Web_1'), /metadata\.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain/));
  it('rejects an invalid namespace', () => expectInvalid(pod('  containers: [{name: a, image: x}]', 'namespace: Kube.System\n  name: p'), /metadata\.namespace/));
  it('rejects no containers', () => expectInvalid(pod('  containers: []'), /spec\.containers: Required value/));
  it('rejects a missing spec', () => expectInvalid('apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n', /spec: Required/));
  it('rejects a container without image', () => expectInvalid(pod('  containers: [{name: a}]'), /spec\.containers\[0\]\.image: Required value/));
  it('rejects a container without name', () => expectInvalid(pod('  containers: [{image: busybox}]'), /spec\.containers\[0\]\.name: Required value/));
  it('rejects an invalid container name', () => expectInvalid(pod('  containers: [{name: My_Ctr, image: busybox}]'), /containers\[0\]\.name: Invalid value/));
  it('rejects duplicate container names, also across init containers', () => {
    expectInvalid(pod('  containers: [{name: a, image: x}, {name: a, image: z}]'), /containers\[1\]\.name: Duplicate value: "a"/);
    expectInvalid(pod('  initContainers: [{name: a, image: x}]\n  containers: [{name: a, image: z}]'), /containers\[0\]\.name: Duplicate value: "a"/);
  });
  it('rejects bad enum values and ports', () => {
    expectInvalid(pod('  restartPolicy: Sometimes\n  containers: [{name: a, image: x}]'), /restartPolicy: Unsupported value/);
    expectInvalid(pod('  containers: [{name: a, image: x, imagePullPolicy: Maybe}]'), /imagePullPolicy: Unsupported value/);
    expectInvalid(pod('  containers: [{name: a, image: x, ports: [{containerPort: 70000}]}]'), /containerPort/);
    expectInvalid(pod('  containers: [{name: a, image: x, ports: [{containerPort: 80, protocol: HTTP}]}]'), /protocol: Unsupported value/);
  });
  it('rejects mounts of undeclared volumes and duplicate volumes', () => {
    expectInvalid(pod('  containers: [{name: a, image: x, volumeMounts: [{name: data, mountPath: /d}]}]'), /volumeMounts\[0\]\.name: Not found: "data"/);
    expectInvalid(pod('  volumes: [{name: v, emptyDir: {}}, {name: v, emptyDir: {}}]\n  containers: [{name: a, image: x}]'), /volumes\[1\]\.name: Duplicate/);
  });
  it('reports every problem at once', () => {
    expectInvalid(pod('  containers: [{name: a}, {image: x}]'), /containers\[0\]\.image.*containers\[1\]\.name/);
  });
});

describe('manifest: YAML 1.1 and hostile input', () => {
  it('reads YAML 1.1 octal modes and booleans as the API server does', () => {
    const p = parseManifest(
      pod(
        '  hostNetwork: yes\n  volumes: [{name: s, secret: {secretName: x, defaultMode: 0400, items: [{key: k, path: k, mode: 0600}]}}, {name: c, configMap: {name: cm, defaultMode: 0o644}}]\n' +
          '  containers: [{name: a, image: x, command: ["22:22"], ports: [{containerPort: 0x50}]}]',
      ),
      FILE,
    );
    assert.equal(p.spec?.hostNetwork, true);
    assert.equal(p.spec?.volumes?.[0]?.secret?.defaultMode, 0o400);
    assert.equal(p.spec?.volumes?.[0]?.secret?.items?.[0]?.mode, 0o600);
    assert.equal(p.spec?.volumes?.[1]?.configMap?.defaultMode, 0o644);
    assert.equal(p.spec?.containers[0]?.ports?.[0]?.containerPort, 80);
    assert.deepEqual(p.spec?.containers[0]?.command, ['22:22']);
  });

  it('names a YAML 1.1 boolean where a string belongs instead of reading it as text', () => {
    expectInvalid(pod('  containers: [{name: a, image: x, env: [{name: E, value: yes}]}]'), /spec\.containers\[0\]\.env\[0\]\.value: expected string, got boolean/);
  });

  it('refuses an alias bomb at once, naming the problem, not the content', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 9; i++) levels.push(`${'abcdefghi'[i]}: &${'abcdefghi'[i]} [${Array(9).fill(`*${'abcdefghi'[i - 1]}`).join(',')}]`);
    const text = pod(`  containers: [{name: a, image: x, command: *i}]`).replace('kind: Pod', `kind: Pod\n${levels.join('\n')}`);
    const t0 = performance.now();
    expectInvalid(text, /not valid YAML or JSON: excessive aliasing: the document expands to more than 3145728 bytes/);
    assert.ok(performance.now() - t0 < 1000, 'refused without expanding the aliases');
  });

  it('refuses deep nesting with a clear error, not a stack overflow', () => {
    expectInvalid(pod(`  containers: [{name: a, image: x, command: ${'['.repeat(100_000)}]}]`), /not valid YAML or JSON: line \d+, column \d+: nesting exceeded maxDepth \(100\)/);
  });

  it('reports a syntax error by position without quoting the file', () => {
    const secret = 'SECRET_TOKEN=abcdef0123456789';
    assert.throws(
      () => parseManifest(`apiVersion: v1\nkind: Pod\n# ${secret}\nmetadata: {name: [oops\n# ${secret}\n`, FILE),
      (err: unknown) => {
        assert.ok(err instanceof KubeletError);
        assert.match(err.message, /^static pod manifest \/etc\/kubernetes\/manifests\/web\.yaml: not valid YAML or JSON: line 6, column 1: /);
        assert.ok(!err.message.includes(secret) && !err.message.includes('oops'), err.message);
        assert.equal(err.cause, undefined, 'no cause: a logger would print its message');
        return true;
      },
    );
  });

  it('refuses a file larger than the API server takes', () => {
    expectInvalid(`${WEB_YAML}# ${'x'.repeat(3 * 1024 * 1024)}\n`, /: file is larger than 3145728 bytes$/);
  });

  it('lists every problem, field first, separated by semicolons', () => {
    assert.throws(
      () => parseManifest(pod('  containers: [{name: a, image: x, command: 3, ports: [{containerPort: 80, protocol: HTTP}], resources: {limits: {cpu: lots}}}]'), FILE),
      (err: unknown) => {
        assert.ok(err instanceof KubeletError);
        const [head, ...problems] = err.message.split(': invalid pod: ');
        assert.equal(head, `static pod manifest ${FILE}`);
        assert.deepEqual(problems.join('').split('; '), [
          'spec.containers[0].command: expected list, got number',
          'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "TCP", "UDP", "SCTP"',
          `spec.containers[0].resources.limits[cpu]: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
        ]);
        return true;
      },
    );
  });

  it('refuses oversized label keys and annotations with upstream limits', () => {
    expectInvalid(pod('  containers: [{name: a, image: x}]', `name: p\n  labels: {${'k'.repeat(10_000)}: v}`), /metadata\.labels: Invalid value: "k{64}\.\.\." \(10000 characters\): name part must be no more than 63 characters/);
    expectInvalid(pod('  containers: [{name: a, image: x}]', `name: p\n  annotations: {big: "${'a'.repeat(300 * 1024)}"}`), /metadata\.annotations: Too long: may not be more than 262144 bytes/);
  });

  it('refuses a grace period JavaScript cannot represent exactly', () => {
    expectInvalid(pod('  terminationGracePeriodSeconds: 9223372036854775807\n  containers: [{name: a, image: x}]'), /spec\.terminationGracePeriodSeconds: Invalid value: 9223372036854776000: must be between -9007199254740991 and 9007199254740991/);
  });

  it('refuses a UID that would name a directory outside the pod\'s', () => {
    expectInvalid(pod('  containers: [{name: a, image: x}]', 'name: p\n  uid: ../../etc'), /metadata\.uid: Invalid value: "\.\.\/\.\.\/etc"/);
  });
});

describe('manifest: applyStaticPodDefaults', () => {
  it('applies the API defaults', () => {
    const p = applyStaticPodDefaults(parseManifest(WEB_YAML, FILE), opts);
    const spec = p.spec!;
    assert.equal(spec.restartPolicy, 'Always');
    assert.equal(spec.dnsPolicy, 'ClusterFirst');
    assert.equal(spec.terminationGracePeriodSeconds, 30);
    assert.equal(spec.schedulerName, 'default-scheduler');
    assert.equal(spec.enableServiceLinks, true);
    assert.deepEqual(spec.securityContext, {});
    const c = spec.containers[0]!;
    assert.equal(c.imagePullPolicy, 'IfNotPresent');
    assert.equal(c.terminationMessagePath, '/dev/termination-log');
    assert.equal(c.terminationMessagePolicy, 'File');
    assert.equal(c.ports?.[0]?.protocol, 'TCP');
    assert.deepEqual(c.resources?.limits, { cpu: '1', memory: '64Mi' });
    assert.deepEqual(c.resources?.requests, { cpu: '1', memory: '64Mi' });
  });

  it('takes the deprecated serviceAccount as serviceAccountName when that is unset, as upstream\'s conversion does', () => {
    const spec = (yaml: string) => applyStaticPodDefaults(parseManifest(pod(yaml), FILE), opts).spec!;
    assert.equal(spec('  serviceAccount: old\n  containers: [{name: a, image: x}]').serviceAccountName, 'old');
    assert.equal(spec('  serviceAccount: old\n  serviceAccountName: new\n  containers: [{name: a, image: x}]').serviceAccountName, 'new');
  });

  it('keeps explicit values', () => {
    const p = applyStaticPodDefaults(
      parseManifest(pod('  restartPolicy: Never\n  dnsPolicy: Default\n  terminationGracePeriodSeconds: 0\n  enableServiceLinks: false\n  containers: [{name: a, image: x, imagePullPolicy: Never}]'), FILE),
      opts,
    );
    assert.equal(p.spec?.restartPolicy, 'Never');
    assert.equal(p.spec?.dnsPolicy, 'Default');
    assert.equal(p.spec?.terminationGracePeriodSeconds, 0);
    assert.equal(p.spec?.enableServiceLinks, false);
    assert.equal(p.spec?.containers[0]?.imagePullPolicy, 'Never');
  });

  it('defaults the pull policy from the image tag like upstream ParseImageName', () => {
    assert.equal(defaultPullPolicy('nginx'), 'Always');
    assert.equal(defaultPullPolicy('nginx:latest'), 'Always');
    assert.equal(defaultPullPolicy('nginx:1.25'), 'IfNotPresent');
    assert.equal(defaultPullPolicy('localhost:5000/nginx'), 'Always');
    assert.equal(defaultPullPolicy('localhost:5000/team/nginx:v2'), 'IfNotPresent');
    assert.equal(defaultPullPolicy(`nginx@sha256:${'a'.repeat(64)}`), 'IfNotPresent');
    assert.equal(defaultPullPolicy(`nginx:latest@sha256:${'a'.repeat(64)}`), 'Always');
  });

  it('defaults probes, volumes and host network ports', () => {
    const p = applyStaticPodDefaults(
      parseManifest(
        pod(
          '  hostNetwork: true\n  volumes: [{name: v}, {name: s, secret: {secretName: x}}, {name: h, hostPath: {path: /x}}]\n' +
            '  containers: [{name: a, image: x, ports: [{containerPort: 10250}], livenessProbe: {httpGet: {port: 80}}}]',
        ),
        FILE,
      ),
      opts,
    );
    const c = p.spec!.containers[0]!;
    assert.equal(c.ports?.[0]?.hostPort, 10250);
    assert.deepEqual(
      { ...c.livenessProbe, httpGet: { ...c.livenessProbe!.httpGet } },
      { httpGet: { port: 80, path: '/', scheme: 'HTTP' }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 },
    );
    assert.deepEqual(p.spec!.volumes![0]!.emptyDir, {});
    assert.equal(p.spec!.volumes![1]!.secret?.defaultMode, 420);
    assert.equal(p.spec!.volumes![2]!.hostPath?.type, '');
  });

  it('applies the static pod treatment', () => {
    const p = applyStaticPodDefaults(parseManifest(WEB_YAML, FILE), { ...opts, seen: '2024-01-01T00:00:00.000Z' });
    assert.equal(p.metadata?.name, 'web-node-1');
    assert.equal(p.metadata?.namespace, 'default');
    assert.equal(p.spec?.nodeName, 'Node-1');
    assert.match(p.metadata!.uid!, /^[0-9a-f]{32}$/);
    assert.equal(p.metadata?.annotations?.[CONFIG_HASH_ANNOTATION], p.metadata?.uid);
    assert.equal(p.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION], 'file');
    assert.equal(p.metadata?.annotations?.[CONFIG_SEEN_ANNOTATION], '2024-01-01T00:00:00.000Z');
    assert.ok(!(CONFIG_MIRROR_ANNOTATION in p.metadata!.annotations!));
    assert.deepEqual(p.spec?.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }]);
    assert.equal(p.status?.phase, 'Pending');
    assert.deepEqual(p.metadata?.labels, { app: 'web' });
  });

  it('does not mutate its input', () => {
    const parsed = parseManifest(WEB_YAML, FILE);
    const before = canonicalJson(parsed);
    applyStaticPodDefaults(parsed, opts);
    assert.equal(canonicalJson(parsed), before);
  });

  it('derives a UID independent of key order, formatting and seen time', () => {
    const a = applyStaticPodDefaults(parseManifest(WEB_YAML, FILE), { ...opts, seen: 'a' });
    const b = applyStaticPodDefaults(parseManifest(WEB_JSON, FILE), { ...opts, seen: 'b' });
    assert.equal(a.metadata?.uid, b.metadata?.uid);
    const explicitDefaults = WEB_YAML.replace('spec:\n', 'spec:\n  restartPolicy: Always\n');
    // Explicitly written defaults equal the defaulted form (upstream hashes the defaulted pod).
    assert.equal(applyStaticPodDefaults(parseManifest(explicitDefaults, FILE), opts).metadata?.uid, a.metadata?.uid);
  });

  it('keeps the UIDs of earlier releases (a restarted kubelet recognises its pods)', () => {
    // Computed by the decoder and defaults before YAML 1.1 and the new validation: an upgrade
    // must not turn every static pod into a new one.
    assert.equal(applyStaticPodDefaults(parseManifest(WEB_YAML, FILE), opts).metadata?.uid, '7576bc50154eb29ee21a3c870379d6e5');
    const rich = '/etc/kubernetes/manifests/rich.yaml';
    assert.equal(applyStaticPodDefaults(parseManifest(RICH_POD_YAML, rich), { ...opts, file: rich }).metadata?.uid, '481ef3757a5eee9c28813296d3e7872b');
  });

  it('changes the UID with content, node and file', () => {
    const base = applyStaticPodDefaults(parseManifest(WEB_YAML, FILE), opts).metadata!.uid;
    const edited = applyStaticPodDefaults(parseManifest(WEB_YAML.replace('nginx:1.25', 'nginx:1.26'), FILE), opts).metadata!.uid;
    const otherNode = applyStaticPodDefaults(parseManifest(WEB_YAML, FILE), { ...opts, nodeName: 'node-2' }).metadata!.uid;
    const otherFile = applyStaticPodDefaults(parseManifest(WEB_YAML, FILE), { ...opts, file: '/etc/kubernetes/manifests/web2.yaml' }).metadata!.uid;
    assert.equal(new Set([base, edited, otherNode, otherFile]).size, 4);
  });

  it('keeps a UID given in the manifest and drops kubelet-owned annotations', () => {
    const text = WEB_YAML.replace(
      '  name: web\n',
      `  name: web\n  uid: 11111111-2222-3333-4444-555555555555\n  annotations:\n    ${CONFIG_MIRROR_ANNOTATION}: "x"\n    keep: "me"\n`,
    );
    const p = applyStaticPodDefaults(parseManifest(text, FILE), opts);
    assert.equal(p.metadata?.uid, '11111111-2222-3333-4444-555555555555');
    assert.equal(p.metadata?.annotations?.[CONFIG_HASH_ANNOTATION], p.metadata?.uid);
    assert.equal(p.metadata?.annotations?.keep, 'me');
    assert.ok(!(CONFIG_MIRROR_ANNOTATION in p.metadata!.annotations!));
  });

  it('keeps an explicit namespace and rejects a suffixed name that is too long', () => {
    const p = applyStaticPodDefaults(parseManifest(pod('  containers: [{name: a, image: x}]', 'name: p\n  namespace: kube-system'), FILE), opts);
    assert.equal(p.metadata?.namespace, 'kube-system');
    const long: V1Pod = parseManifest(pod('  containers: [{name: a, image: x}]', `name: ${'a'.repeat(250)}`), FILE);
    assert.throws(() => applyStaticPodDefaults(long, opts), (err: unknown) => err instanceof KubeletError && err.code === 'InvalidInput' && err.message.includes(FILE));
  });
});
