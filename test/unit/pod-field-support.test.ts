/**
 * The pod field table (core/objects/pod-field-support.ts) against the code: every field the
 * client library's models know has an entry (a field a newer client brings fails here until
 * someone says what kubelet-ts does with it), and every refusal the table lists is what a
 * kubelet really does with a pod that sets the field: static-pod validation's problem, or, on
 * a kubelet on the fake CRI, the pod's Failed reason, its container's waiting reason, or its
 * Warning event, each naming the field.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { POD_FIELD_SECTIONS, POD_FIELD_SUPPORT, type PodFieldEntry } from '../../core/objects/pod-field-support.ts';
import { validatePod } from '../../core/objects/validation/pod-validation.ts';
import { loadObjectModels } from '../../core/objects/object-decoder.ts';
import { podFieldsMarkdown, podFieldsBlock, POD_FIELDS_DOC } from '../../tools/docs-pod-fields.ts';
import { fakeCriSuite } from '../support/fake-cri-suite.ts';
import { podManifest } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';
import { readFile } from 'node:fs/promises';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const IMAGE = 'busybox:1.36';

/** The attribute names of a client model (its generated `attributeTypeMap`). */
function modelFields(model: string): string[] {
  const cls = (k8s as unknown as Record<string, { getAttributeTypeMap(): Array<{ name: string; baseName: string }> } | undefined>)[model];
  assert.ok(cls, `@kubernetes/client-node has no model ${model}`);
  return cls.getAttributeTypeMap().map((a) => a.baseName);
}

/** Every `<section>.<field>` the client's models define (ephemeral containers: beyond V1Container's). */
function clientFieldKeys(): string[] {
  const container = new Set(modelFields('V1Container'));
  return POD_FIELD_SECTIONS.flatMap((s) => modelFields(s.model).filter((f) => s.prefix !== 'ephemeralContainer' || !container.has(f)).map((f) => `${s.prefix}.${f}`));
}

/** The word a refusal's message must contain to name the field: the field's name, singular, any case. */
const fieldWord = (key: string) => key.split('.').at(-1)!.replace(/s$/, '').toLowerCase();

describe('pod field support table (issue 36: nothing accepted silently)', function () {
  it('has an entry for every field of the client\'s pod, container, security context, resources, env source, mount, volume, projection, probe and lifecycle models', function () {
    const missing = clientFieldKeys().filter((key) => !Object.hasOwn(POD_FIELD_SUPPORT, key));
    assert.deepEqual(missing, [], `fields with no entry in core/objects/pod-field-support.ts (say what kubelet-ts does with them): ${missing.join(', ')}`);
  });

  it('lists no field the client\'s models do not have', function () {
    const known = new Set(clientFieldKeys());
    assert.deepEqual(Object.keys(POD_FIELD_SUPPORT).filter((key) => !known.has(key)), []);
  });

  it('says how each refused field is refused, and names files that exist', function () {
    for (const [key, entry] of Object.entries(POD_FIELD_SUPPORT)) {
      if (entry.support === 'refused') assert.ok(entry.refusal, `${key} is refused: its entry must say how`);
      assert.ok(entry.what.length > 0, `${key}: what kubelet-ts does is empty`);
      if (/^[\w./-]+$/.test(entry.where) && entry.where !== '-') assert.ok(existsSync(path.join(ROOT, entry.where)), `${key}: ${entry.where} does not exist`);
    }
  });

  it('docs/operating/pods.md has the table as tools/docs-pod-fields.ts writes it', async function () {
    const block = podFieldsBlock(await readFile(POD_FIELDS_DOC, 'utf8'));
    assert.ok(block !== undefined, 'docs/operating/pods.md has no pod-fields block');
    assert.equal(block, podFieldsMarkdown(), 'docs/operating/pods.md is out of date: run `npx tsx tools/docs-pod-fields.ts`');
  });
});

/** A one-container static pod named after the field, with `spec` and `container` merged in. */
function probePod(name: string, spec: object = {}, container: object = {}): object {
  return podManifest(name, [{ name: 'app', image: IMAGE, command: ['sleep', '3600'], ...container }], spec);
}

/** A pod whose only volume is `kind` (mounted at /v), for the volume kinds no plugin serves. */
const volumePod = (name: string, kind: string, source: object = {}) => probePod(name, { volumes: [{ name: 'v', [kind]: source }] }, { volumeMounts: [{ name: 'v', mountPath: '/v' }] });

/** Minimal sources for the kinds whose fields validation checks. */
const VOLUME_SOURCES: Record<string, object> = {
  image: { reference: 'registry.example/data:1', pullPolicy: 'IfNotPresent' },
  nfs: { server: 'nfs.example', path: '/export' },
  gitRepo: { repository: 'https://git.example/r.git' },
};

/** For each refused field (or refused value), a pod that sets it. */
function probeFor(key: string): object {
  const name = `pf-${key.replace(/[^a-zA-Z]/g, '-').toLowerCase()}`;
  if (key.startsWith('volume.')) {
    const kind = key.slice('volume.'.length);
    return volumePod(name, kind, VOLUME_SOURCES[kind] ?? {});
  }
  switch (key) {
    case 'spec.ephemeralContainers': return probePod(name, { ephemeralContainers: [{ name: 'debug', image: IMAGE }] });
    case 'spec.resourceClaims': return probePod(name, { resourceClaims: [{ name: 'gpu', resourceClaimName: 'gpu-claim' }] });
    case 'spec.hostUsers': return probePod(name, { hostUsers: false });
    case 'spec.os': return probePod(name, { os: { name: 'windows' } });
    case 'spec.resources': return probePod(name, { resources: { limits: { cpu: '1', memory: '64Mi' } } });
    case 'container.restartPolicy': return probePod(name, {}, { restartPolicy: 'Always' });
    case 'resources.requests': return probePod(name, {}, { resources: { limits: { memory: '64Mi', 'hugepages-1Gi': '1000Gi' } } });
    case 'resources.claims': return probePod(name, {}, { resources: { claims: [{ name: 'gpu' }] } });
    case 'podSecurityContext.supplementalGroupsPolicy': return probePod(name, { securityContext: { supplementalGroupsPolicy: 'Strict' } });
    case 'podSecurityContext.sysctls': return probePod(name, { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '1' }] } });
    case 'securityContext.capabilities': return probePod(name, {}, { securityContext: { capabilities: { add: ['NOT_A_CAPABILITY'] } } });
    case 'securityContext.procMount': return probePod(name, {}, { securityContext: { procMount: 'Unmasked' } });
    case 'envSource.fileKeyRef':
      return probePod(name, { volumes: [{ name: 'v', emptyDir: {} }] }, { env: [{ name: 'FROM_FILE', valueFrom: { fileKeyRef: { volumeName: 'v', path: 'env', key: 'K' } } }] });
    case 'projection.clusterTrustBundle':
      return volumePod(name, 'projected', { sources: [{ clusterTrustBundle: { signerName: 'example.com/signer', path: 'bundle.pem' } }] });
    case 'projection.podCertificate':
      return volumePod(name, 'projected', { sources: [{ podCertificate: { signerName: 'example.com/signer', keyType: 'ED25519', credentialBundlePath: 'creds.pem' } }] });
    case 'volumeMount.recursiveReadOnly':
      return probePod(name, { volumes: [{ name: 'v', emptyDir: {} }] }, { volumeMounts: [{ name: 'v', mountPath: '/v', readOnly: true, recursiveReadOnly: 'Enabled' }] });
    default: throw new Error(`${key} is refused in the table but this test has no pod for it: add one to probeFor`);
  }
}

const refused = () => Object.entries(POD_FIELD_SUPPORT).filter((e): e is [string, PodFieldEntry & { refusal: NonNullable<PodFieldEntry['refusal']> }] => e[1].refusal !== undefined);

describe('every refusal in the pod field table is what the kubelet does', function () {
  this.timeout(60_000);
  before(() => loadObjectModels());

  it('static pod validation refuses each field it is listed for, naming it', function () {
    for (const [key, entry] of refused().filter(([, e]) => e.refusal.stage === 'static-pod-validation')) {
      const problems = validatePod(probeFor(key));
      assert.ok(problems.includes(entry.refusal.reason), `${key}: expected the problem "${entry.refusal.reason}", got ${JSON.stringify(problems)}`);
      assert.ok(entry.refusal.reason.toLowerCase().includes(fieldWord(key)), `${key}: the problem does not name the field`);
    }
  });

  describe('on the fake CRI', function () {
    const suite = fakeCriSuite({ prefix: 'kts-pod-fields-', images: [IMAGE] });

    it('admission, sandbox, container and volume refusals: the pod shows the table\'s reason with a message naming the field', async function () {
      const probes = refused().filter(([, e]) => e.refusal.stage !== 'static-pod-validation');
      const t = await suite.start();
      const names = new Map<string, string>();
      for (const [key] of probes) {
        const pod = probeFor(key) as { metadata: { name: string } };
        assert.deepEqual(validatePod(pod), [], `${key}: the probe pod must pass static validation to reach its refusal`);
        names.set(key, pod.metadata.name);
        await t.writeManifest(`${pod.metadata.name}.json`, pod);
      }
      const failures: string[] = [];
      // All at once: a probe that is not refused waits out its bound beside the others.
      await Promise.all(probes.map(async ([key, entry]) => {
        const want = entry.refusal.reason.split(':')[0]!;
        // What a user sees: the pod's Failed reason, its container's waiting reason, or a Warning event, with its message.
        const seen = (p: V1Pod | undefined): Array<{ reason: string; message: string }> => {
          if (!p) return [];
          const out = [];
          if (p.status?.reason) out.push({ reason: p.status.reason, message: p.status.message ?? '' });
          for (const c of p.status?.containerStatuses ?? []) if (c.state?.waiting?.reason) out.push({ reason: c.state.waiting.reason, message: c.state.waiting.message ?? '' });
          for (const e of t.kubelet.events.list()) if (e.involvedObject.uid === p.metadata?.uid && e.type === 'Warning') out.push({ reason: e.reason ?? '', message: e.message ?? '' });
          return out;
        };
        const name = names.get(key)!;
        const pod = await t.waitForPod(name, (p) => seen(p).some((s) => s.reason === want), 15_000, `reason ${want}`).catch((err: Error) => {
          failures.push(`${key}: ${err.message}`);
          return undefined;
        });
        if (!pod) return;
        const match = seen(pod).filter((s) => s.reason === want);
        const named = (entry.refusal.messageNames ?? fieldWord(key)).toLowerCase();
        if (!match.some((s) => s.message.toLowerCase().includes(named))) failures.push(`${key}: ${want} does not name the field: ${JSON.stringify(match)}`);
        const check = (ok: boolean, what: string) => ok || failures.push(`${key}: ${what}`);
        if (entry.refusal.stage === 'admission') {
          check(pod.status?.phase === 'Failed', `an admission refusal fails the pod (phase ${pod.status?.phase})`);
          check(t.kubelet.events.list().some((e) => e.involvedObject.uid === pod.metadata?.uid && e.reason === want), `no ${want} event`);
        }
        if (entry.refusal.stage === 'sandbox') check(!suite.fake.sandboxes().some((s) => s.config.metadata.name.startsWith(name)), 'a refused sandbox is never made');
        if (entry.refusal.stage === 'container-config') check(!suite.fake.containers().some((c) => c.config.labels?.['io.kubernetes.pod.name']?.startsWith(name)), 'a refused container is never created');
      }));
      failures.sort();
      assert.deepEqual(failures, []);
    });

    it('recursiveReadOnly reaches CRI as recursive_read_only on a runtime handler that reports it (Enabled and IfPossible); IfPossible elsewhere is a plain read-only mount', async function () {
      const mounts = (pod: string) => waitFor(`${pod}'s container`, () => suite.fake.containers().find((c) => c.config.labels?.['io.kubernetes.pod.name']?.startsWith(pod)), 8000).then((c) => c.config.mounts.filter((m: { containerPath: string }) => m.containerPath === '/v'));
      const rroPod = (name: string, mode: string) => probePod(name, { volumes: [{ name: 'v', emptyDir: {} }] }, { volumeMounts: [{ name: 'v', mountPath: '/v', readOnly: true, recursiveReadOnly: mode }] });
      const t = await suite.start();
      await t.writeManifest('plain.json', rroPod('rro-plain', 'IfPossible'));
      assert.deepEqual((await mounts('rro-plain')).map((m: { readonly?: boolean; recursiveReadOnly?: boolean }) => [m.readonly, m.recursiveReadOnly ?? false]), [[true, false]]);
      suite.fake.setRuntimeHandlers([{ name: '', features: { recursiveReadOnlyMounts: true } }]);
      await t.writeManifest('enabled.json', rroPod('rro-enabled', 'Enabled'));
      await t.writeManifest('ifpossible.json', rroPod('rro-ifpossible', 'IfPossible'));
      for (const pod of ['rro-enabled', 'rro-ifpossible']) {
        assert.deepEqual((await mounts(pod)).map((m: { readonly?: boolean; recursiveReadOnly?: boolean }) => [m.readonly, m.recursiveReadOnly]), [[true, true]], pod);
      }
    });
  });
});
