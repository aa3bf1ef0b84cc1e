/**
 * Pods the API server accepts that a kubelet finds odd: extreme quantities, unicode wherever a
 * free string goes (annotations, env values, commands, working dirs), thousands of env vars,
 * volumes, mounts, ports or host aliases, deep and wide projected volumes, many containers and
 * sidecars, int32-edge probe and security fields, names at their length limits, selectors and
 * resources the node cannot satisfy. Each case is a few of these features on a plain pod,
 * bound to the node by `spec.nodeName` (no scheduler in between), seeded and reproducible.
 *
 * Nothing here asks the node for anything of the host (no hostPath, no host namespaces): the
 * same cases run on real containerd.
 */
import type { V1Container, V1EnvVar, V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { Rng } from './prng.ts';

export interface ApiPodCase {
  index: number;
  /** The features, for reports. */
  kind: string;
  pod: V1Pod;
}

const INT32_MAX = 2_147_483_647;
const UNICODE = ['\u00e9t\u00e9', '\u{1F600}\u{1F4A9}', '\u202eevil\u202c', 'z\u200bw\u200cj\u200d', '\u0000nul', '\u65e5\u672c\u8a9e', '\uFEFFbom', '\u0301\u0301\u0301', 'a\u0000b\u0007c\u001b[31m', '\ud7ff\ue000\uffff'];

const unicode = (rng: Rng, n: number) => Array.from({ length: n }, () => rng.pick(UNICODE)).join('');
/** A DNS label of exactly `n` characters (n <= 63). */
const label = (prefix: string, n: number) => (prefix + 'x'.repeat(63)).slice(0, n).replace(/-$/, 'x');

type Feature = (rng: Rng, pod: V1Pod, main: V1Container, image: string) => string;

const FEATURES: Record<string, Feature> = {
  quantities(rng, _pod, c) {
    const big = rng.pick(['1E', '8E', '9223372036854775807', '1e18', '999999', '1000000000m', '8Ei']);
    const cpu = rng.pick(['1m', '1000000', '2147483647', '0.001', '999999999m']);
    const same = rng.chance(0.5);
    c.resources = same
      ? { requests: { cpu, memory: big, 'ephemeral-storage': big }, limits: { cpu, memory: big, 'ephemeral-storage': big } }
      : { requests: { cpu: '1m', memory: '1' }, limits: { cpu, memory: big, 'example.com/widget': '1000', 'ephemeral-storage': '1' } };
    if (!same) c.resources.requests!['example.com/widget'] = '1000';
    return `quantities cpu=${cpu} memory=${big}`;
  },
  'tiny memory'(rng, _pod, c) {
    c.resources = { limits: { memory: rng.pick(['1', '4096', '1Ki', '1m']) } };
    return `memory limit ${c.resources.limits!.memory}`;
  },
  'unicode everywhere'(rng, pod, c) {
    pod.metadata!.annotations = { ...pod.metadata!.annotations, 'fuzz.example.com/text': unicode(rng, rng.int(1, 2000)) };
    c.command = ['sh', '-c', `echo ${unicode(rng, 5)}`, unicode(rng, rng.int(1, 50))];
    c.args = Array.from({ length: rng.int(1, 100) }, () => unicode(rng, 3));
    c.workingDir = `/${unicode(rng, 3).replace(/[\u0000/]/g, '')}`;
    c.terminationMessagePath = `/dev/${unicode(rng, 2).replace(/[\u0000/]/g, '')}`;
    (c.env ??= []).push({ name: 'UNICODE', value: unicode(rng, 200) });
    return 'unicode';
  },
  'thousands of env vars'(rng, _pod, c) {
    const n = rng.int(1000, 5000);
    const env: V1EnvVar[] = [];
    for (let i = 0; i < n; i++) {
      const k = rng.int(0, 9);
      if (k === 0 && i > 0) env.push({ name: `V_${i}`, value: `$(V_${i - 1})$(V_${i - 1})$$(X)` }); // expansion chains
      else if (k === 1) env.push({ name: `V_${i}`, valueFrom: { fieldRef: { fieldPath: rng.pick(['metadata.name', 'metadata.namespace', 'status.podIP', 'status.hostIP', 'spec.nodeName', 'metadata.uid', 'status.podIPs', 'spec.serviceAccountName']) } } });
      else if (k === 2) {
        // The divisors validation allows: 1m or 1 for CPU, binary or decimal units for bytes.
        const resource = rng.pick(['limits.cpu', 'limits.memory', 'requests.cpu', 'limits.ephemeral-storage']);
        env.push({ name: `V_${i}`, valueFrom: { resourceFieldRef: { resource, divisor: resource.endsWith('cpu') ? rng.pick(['1', '1m']) : rng.pick(['1', '1Ki', '1Mi', '1Gi', '1Ti', '1Pi', '1Ei', '1k', '1E']) } } });
      }
      else if (k === 3) env.push({ name: `V_${i}`, valueFrom: { configMapKeyRef: { name: 'missing', key: 'k', optional: true } } });
      else env.push({ name: rng.chance(0.1) ? `weird.name-${i}` : `V_${i}`, value: rng.chance(0.1) ? unicode(rng, 2) : String(i) });
    }
    c.env = [...(c.env ?? []), ...env];
    if (rng.chance(0.3)) c.envFrom = Array.from({ length: rng.int(1, 50) }, (_, i) => ({ prefix: `P${i}_`, configMapRef: { name: `missing-${i}`, optional: true } }));
    return `${n} env vars`;
  },
  'thousands of volumes'(rng, pod, c) {
    const n = rng.int(500, 3000);
    const volumes: V1Volume[] = [];
    const mounts: V1VolumeMount[] = [];
    for (let i = 0; i < n; i++) {
      volumes.push(rng.chance(0.8) ? { name: `v${i}`, emptyDir: rng.chance(0.3) ? { medium: 'Memory', sizeLimit: rng.pick(['1', '1Ei', '64Mi']) } : {} } : { name: `v${i}`, configMap: { name: `missing-${i}`, optional: true, defaultMode: rng.pick([0, 0o777, 0o400]) } });
      if (rng.chance(0.3)) mounts.push({ name: `v${i}`, mountPath: `/m/${i}`, readOnly: rng.chance(0.5), ...(rng.chance(0.2) ? { subPath: `sub/${i}` } : {}) });
    }
    pod.spec!.volumes = [...(pod.spec!.volumes ?? []), ...volumes];
    c.volumeMounts = [...(c.volumeMounts ?? []), ...mounts];
    return `${n} volumes, ${mounts.length} mounts`;
  },
  'deep projection'(rng, pod, c) {
    const depth = rng.int(10, 60);
    const deep = Array.from({ length: depth }, (_, i) => `d${i}`).join('/');
    const sources = [];
    const nSources = rng.int(1, 40);
    for (let s = 0; s < nSources; s++) {
      switch (rng.int(0, 3)) {
        case 0:
          sources.push({ downwardAPI: { items: Array.from({ length: rng.int(1, 100) }, (_, i) => ({ path: `${deep}/s${s}/f${i}`, ...(rng.chance(0.5) ? { fieldRef: { fieldPath: rng.pick(['metadata.labels', 'metadata.annotations', 'metadata.name', "metadata.annotations['fuzz.example.com/text']"]) } } : { resourceFieldRef: { containerName: 'main', resource: 'limits.memory', divisor: '1' } }), mode: rng.pick([0, 0o777, 0o400]) })) } });
          break;
        case 1:
          sources.push({ configMap: { name: `missing-${s}`, optional: true, items: [{ key: 'k', path: `${deep}/cm${s}` }] } });
          break;
        case 2:
          sources.push({ secret: { name: `missing-${s}`, optional: true } });
          break;
        default:
          sources.push({ serviceAccountToken: { path: `${deep}/token${s}`, expirationSeconds: rng.pick([600, 3600, INT32_MAX]), audience: unicode(rng, 2) } });
      }
    }
    pod.spec!.volumes = [...(pod.spec!.volumes ?? []), { name: 'deep', projected: { sources, defaultMode: 0o644 } }];
    c.volumeMounts = [...(c.volumeMounts ?? []), { name: 'deep', mountPath: '/deep' }];
    return `projected volume of ${nSources} sources at depth ${depth}`;
  },
  'many containers'(rng, pod, _c, image) {
    const n = rng.int(20, 100);
    for (let i = 0; i < n; i++) pod.spec!.containers.push({ name: `c${i}`, image: rng.pick([image, 'registry.invalid/a/b/c:v1', 'x@sha256:' + 'a'.repeat(64)]), command: ['sleep', '3600'], ports: [{ containerPort: 10_000 + i }] });
    if (rng.chance(0.5)) {
      pod.spec!.initContainers = Array.from({ length: rng.int(1, 20) }, (_, i) => ({ name: `init${i}`, image, command: ['true'], ...(rng.chance(0.5) ? { restartPolicy: 'Always' } : {}) }));
    }
    return `${n} more containers`;
  },
  'extreme probes'(rng, _pod, c) {
    const extreme = () => ({ initialDelaySeconds: rng.pick([0, INT32_MAX]), periodSeconds: rng.pick([1, INT32_MAX]), timeoutSeconds: rng.pick([1, INT32_MAX]), failureThreshold: rng.pick([1, INT32_MAX]) });
    c.livenessProbe = { ...extreme(), exec: { command: ['sh', '-c', 'x'.repeat(rng.int(1, 100_000))] }, terminationGracePeriodSeconds: rng.pick([1, 9_999_999]) };
    c.readinessProbe = { ...extreme(), httpGet: { path: `/${unicode(rng, 3)}`, port: rng.pick([1, 65535]), host: rng.pick(['127.0.0.1', 'example.invalid']), httpHeaders: Array.from({ length: rng.int(0, 200) }, (_, i) => ({ name: `X-H${i}`, value: unicode(rng, 2) })) } };
    c.startupProbe = { ...extreme(), successThreshold: 1, grpc: { port: 65535, service: unicode(rng, 2) } };
    c.lifecycle = { postStart: { httpGet: { port: 1, path: '/' } }, preStop: { exec: { command: ['/no/such/binary'] } } };
    return 'extreme probes';
  },
  'int32 edges'(rng, pod, c) {
    pod.spec!.terminationGracePeriodSeconds = rng.pick([0, 1, 9_223_372_036]);
    pod.spec!.activeDeadlineSeconds = rng.pick([1, 2, INT32_MAX]);
    pod.spec!.securityContext = { runAsUser: rng.pick([0, INT32_MAX]), runAsGroup: rng.pick([0, INT32_MAX]), fsGroup: rng.pick([0, INT32_MAX]), supplementalGroups: Array.from({ length: rng.int(1, 2000) }, (_, i) => INT32_MAX - i), sysctls: [{ name: 'kernel.shm_rmid_forced', value: '1' }, { name: 'net.ipv4.ip_local_port_range', value: '1024 65535' }] };
    c.securityContext = { runAsUser: INT32_MAX, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: Array.from({ length: rng.int(0, 50) }, (_, i) => `CAP_FUZZ_${i}`) }, readOnlyRootFilesystem: true, procMount: 'Default' };
    return `grace ${pod.spec!.terminationGracePeriodSeconds}, deadline ${pod.spec!.activeDeadlineSeconds}`;
  },
  'names at limits'(rng, pod, _c, image) {
    pod.metadata!.name = `${pod.metadata!.name}-${'n'.repeat(253)}`.slice(0, 253);
    pod.metadata!.labels = Object.fromEntries(Array.from({ length: rng.int(1, 60) }, (_, i) => [`l${i}.example.com/${label('k', 63)}`, label('v', 63)]));
    // Another container (others refer to 'main' by name).
    pod.spec!.containers.push({ name: label('c', 63), image, command: ['sleep', '3600'] });
    pod.spec!.hostname = label('h', 63);
    pod.spec!.subdomain = label('s', 63);
    return 'names at their limits';
  },
  'many ports and aliases'(rng, pod, c) {
    c.ports = Array.from({ length: rng.int(100, 3000) }, (_, i) => ({ containerPort: (i % 65535) + 1, protocol: rng.pick(['TCP', 'UDP', 'SCTP']), ...(i < 15 ? { name: `p${i}` } : {}) }));
    pod.spec!.hostAliases = Array.from({ length: rng.int(1, 500) }, (_, i) => ({ ip: rng.chance(0.5) ? `10.0.${i % 256}.1` : `fd00::${i.toString(16)}`, hostnames: Array.from({ length: rng.int(1, 20) }, (_, j) => `h${i}-${j}.example.com`) }));
    pod.spec!.dnsPolicy = 'None';
    pod.spec!.dnsConfig = { nameservers: ['10.0.0.10', 'fd00::10', '1.1.1.1'], searches: Array.from({ length: 6 }, (_, i) => `s${i}.${label('d', 40)}.example.com`), options: Array.from({ length: rng.int(1, 50) }, (_, i) => ({ name: `opt${i}`, value: String(i) })) };
    return `${c.ports.length} ports, ${pod.spec!.hostAliases.length} host aliases`;
  },
  'unsatisfiable'(rng, pod) {
    switch (rng.int(0, 3)) {
      case 0: pod.spec!.nodeSelector = { 'fuzz.example.com/nowhere': 'true' }; return 'node selector that does not match';
      case 1: pod.spec!.affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'NotIn', values: [pod.spec!.nodeName!] }] }] } } }; return 'node affinity excluding the node';
      case 2: pod.spec!.containers[0]!.ports = [{ containerPort: 80, hostPort: 1 }, { containerPort: 81, hostPort: 65535, hostIP: '10.255.255.1' }]; return 'host ports';
      default: pod.spec!.tolerations = Array.from({ length: rng.int(1, 500) }, (_, i) => ({ key: `t${i}`, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: rng.pick([0, -1, 9_223_372_036]) })); return 'many tolerations';
    }
  },
  'restart policies'(rng, pod, c) {
    pod.spec!.restartPolicy = rng.pick(['Never', 'OnFailure']);
    c.command = ['sh', '-c', rng.pick(['exit 0', 'exit 1', 'exit 255', 'kill -9 $$'])];
    return `restartPolicy ${pod.spec!.restartPolicy}`;
  },
  'big annotations'(rng, pod) {
    const n = rng.int(1, 4);
    pod.metadata!.annotations = { ...pod.metadata!.annotations, ...Object.fromEntries(Array.from({ length: n }, (_, i) => [`big${i}.example.com/x`, 'a'.repeat(rng.int(10_000, 50_000))])) };
    return `${n} big annotations`;
  },
};

export const API_POD_FEATURES = Object.keys(FEATURES);

/** Case `index` of the run with `seed`, for node `nodeName`, its containers on `image`: reproducible alone. */
export function apiPodCase(seed: number, index: number, nodeName: string, image: string, prefix = 'fz'): ApiPodCase {
  const rng = new Rng(seed, index);
  const main: V1Container = { name: 'main', image, command: ['sleep', '3600'] };
  const pod: V1Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${prefix}-${index}` },
    spec: { nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [main] },
  };
  const kinds: string[] = [];
  // The first features in turn (each comes up every few cases), then one or two more at random.
  const firstName = API_POD_FEATURES[index % API_POD_FEATURES.length]!;
  kinds.push(FEATURES[firstName]!(rng, pod, main, image));
  const used = new Set([firstName]);
  for (let extra = rng.int(0, 2); extra > 0; extra--) {
    const name = rng.pick(API_POD_FEATURES);
    // A feature once (twice would repeat its volume or container names).
    if (used.has(name)) continue;
    used.add(name);
    kinds.push(FEATURES[name]!(rng, pod, main, image));
  }
  return { index, kind: kinds.join(' + '), pod };
}
