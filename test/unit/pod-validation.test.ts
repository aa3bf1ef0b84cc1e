import assert from 'node:assert/strict';
import { loadObjectModels } from '../../core/objects/object-decoder.ts';
import { validatePod } from '../../core/objects/validation/pod-validation.ts';
import { MAX_REPORTED } from '../../core/objects/validation/field-errors.ts';

type Obj = Record<string, unknown>;

/** A valid pod with `spec` merged over its spec and `container` over its one container. */
function pod(spec: Obj = {}, container: Obj = {}, metadata: Obj = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', ...metadata },
    spec: { containers: [{ name: 'c', image: 'busybox:1.36', ...container }], ...spec },
  };
}

/** Asserts the problems of `p` are exactly `want` (strings) or match it (a regex per problem). */
function problems(p: unknown, ...want: Array<string | RegExp>): void {
  const got = validatePod(p);
  assert.equal(got.length, want.length, `problems: ${JSON.stringify(got, null, 1)}`);
  want.forEach((w, i) => (typeof w === 'string' ? assert.equal(got[i], w) : assert.match(got[i]!, w)));
}

before(() => loadObjectModels());

describe('validatePod: types of every field, from the API models', () => {
  it('accepts a valid pod', () => problems(pod()));

  it('names a value of the wrong type by path, expected and got', () => {
    problems(pod({}, { command: 'sleep 1' }), 'spec.containers[0].command: expected list, got string');
    problems(pod({}, { args: [1] }), 'spec.containers[0].args[0]: expected string, got number');
    problems(pod({ hostNetwork: 'yes' }), 'spec.hostNetwork: expected boolean, got string');
    problems(pod({}, { env: { A: 'b' } }), 'spec.containers[0].env: expected list, got map');
    problems(pod({}, { ports: [{ containerPort: '80' }] }), 'spec.containers[0].ports[0].containerPort: expected integer, got string');
    problems(pod({}, {}, { labels: { app: 1 } }), 'metadata.labels[app]: expected string, got number');
    problems(pod({}, {}, { creationTimestamp: 'yesterday' }), 'metadata.creationTimestamp: Invalid value: "yesterday": must be an RFC 3339 date-time such as 2006-01-02T15:04:05Z');
  });

  it('reads null as an absent field, and refuses null items', () => {
    problems(pod({ securityContext: null, volumes: null }, { resources: null, command: null }, { creationTimestamp: null }));
    problems(pod({}, { command: ['a', null] }), 'spec.containers[0].command[1]: expected string, got null');
  });

  it('refuses integers beyond their range and what JavaScript cannot hold exactly', () => {
    problems(pod({ terminationGracePeriodSeconds: 2 ** 60 }), /^spec\.terminationGracePeriodSeconds: Invalid value: 1152921504606847000: must be between -9007199254740991 and 9007199254740991: a larger integer cannot be represented exactly$/);
    problems(pod({}, { livenessProbe: { exec: { command: ['true'] }, periodSeconds: 2 ** 31 } }), /periodSeconds: Invalid value: 2147483648: must be a 32-bit integer/);
    problems(pod({}, { livenessProbe: { exec: { command: ['true'] }, periodSeconds: 1.5 } }), /periodSeconds: Invalid value: 1\.5: must be an integer$/);
    problems(pod({ activeDeadlineSeconds: NaN }), 'spec.activeDeadlineSeconds: Invalid value: NaN: must be a finite number');
  });

  it('accepts numbers as quantities, nowhere else as strings', () => {
    problems(pod({}, { resources: { limits: { cpu: 1, memory: '64Mi' }, requests: { cpu: 0.5 } } }));
    problems(pod({}, { resources: { limits: { cpu: true } } }), 'spec.containers[0].resources.limits[cpu]: expected quantity (string or number), got boolean');
  });
});

describe('validatePod: upstream rules on what the kubelet reads', () => {
  it('names and labels', () => {
    problems(pod({}, {}, { name: 'a'.repeat(254) }), 'metadata.name: Invalid value: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..." (254 characters): must be no more than 253 characters');
    problems(pod({}, {}, { namespace: 'Kube' }), /^metadata\.namespace: Invalid value: "Kube": a lowercase RFC 1123 label must consist of/);
    problems(pod({}, {}, { labels: { 'example.com/': 'x' } }), /^metadata\.labels: Invalid value: "example\.com\/": name part must be non-empty$/, /name part must consist of alphanumeric characters/);
    problems(pod({}, {}, { labels: { app: '-bad' } }), /^metadata\.labels: Invalid value: "-bad": a valid label must be an empty string or consist of/);
    problems(pod({ nodeSelector: { 'a/b/c': 'x' } }), /^spec\.nodeSelector: Invalid value: "a\/b\/c": a qualified name must consist of/);
    problems(pod({}, {}, { annotations: { a: 'x'.repeat(256 * 1024) } }), 'metadata.annotations: Too long: may not be more than 262144 bytes');
    problems(pod({}, {}, { uid: 'a/../b' }), /^metadata\.uid: Invalid value: "a\/\.\.\/b": must consist of at most 128 alphanumeric characters/);
  });

  it('containers: required fields, names, policies', () => {
    problems(pod({ containers: [] }), 'spec.containers: Required value: a pod needs at least one container');
    problems(pod({}, { name: undefined, image: ' busybox' }), 'spec.containers[0].name: Required value', 'spec.containers[0].image: Invalid value: " busybox": must not have leading or trailing whitespace');
    problems(pod({}, { imagePullPolicy: 'Sometimes' }), 'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"');
    problems(pod({}, { restartPolicy: 'Always' }), 'spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers');
    problems(pod({ initContainers: [{ name: 'i', image: 'x', livenessProbe: { exec: { command: ['true'] } } }] }), 'spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always');
    problems(pod({ initContainers: [{ name: 'i', image: 'x', restartPolicy: 'Always', livenessProbe: { exec: { command: ['true'] } } }] }));
  });

  it('ports', () => {
    problems(pod({}, { ports: [{ containerPort: 0 }] }), 'spec.containers[0].ports[0].containerPort: Required value');
    problems(pod({}, { ports: [{ containerPort: 65536 }] }), 'spec.containers[0].ports[0].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive');
    problems(pod({}, { ports: [{ containerPort: 80, name: 'web--1' }] }), 'spec.containers[0].ports[0].name: Invalid value: "web--1": must not contain consecutive hyphens');
    problems(pod({}, { ports: [{ containerPort: 80, hostPort: 8080 }, { containerPort: 81, hostPort: 8080 }] }), 'spec.containers[0].ports[1].hostPort: Duplicate value: "/TCP/8080"');
    problems(pod({ hostNetwork: true }, { ports: [{ containerPort: 80, hostPort: 8080 }] }), 'spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true');
  });

  it('env', () => {
    problems(pod({}, { env: [{ name: 'A=B' }] }), `spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`);
    problems(pod({}, { env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'spec.secret' } } }] }), /^spec\.containers\[0\]\.env\[0\]\.valueFrom\.fieldRef\.fieldPath: Unsupported value: "spec\.secret": supported values: "metadata\.name"/);
    problems(pod({}, { env: [{ name: 'A', value: 'x', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] }), 'spec.containers[0].env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty');
    problems(pod({}, { env: [{ name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1Mi' } } }] }), /divisor: Invalid value: "1Mi": only divisor's values 1m, 1 are supported with the cpu resource/);
  });

  it('resources', () => {
    problems(pod({}, { resources: { limits: { cpu: ' 1' } } }), /limits\[cpu\]: Invalid value: " 1": quantities must match the regular expression/);
    problems(pod({}, { resources: { limits: { cpu: '-1' } } }), 'spec.containers[0].resources.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0');
    problems(pod({}, { resources: { limits: { cpu: '1e300' } } }), /limits\[cpu\]: Invalid value: "1e300": must be no more than 9007199254740991m/);
    problems(pod({}, { resources: { limits: { gpu: '1' } } }), 'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource for containers');
    problems(pod({}, { resources: { limits: { constructor: '1' } } }), 'spec.containers[0].resources.limits[constructor]: Invalid value: "constructor": must be a standard resource for containers');
    problems(pod({}, { resources: { limits: { 'example.com/gpu': '0.5' } } }), 'spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "0.5": must be an integer');
    problems(pod({}, { resources: { limits: { cpu: '1' }, requests: { cpu: '2' } } }), 'spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1');
  });

  it('probes and handlers', () => {
    problems(pod({}, { readinessProbe: {} }), 'spec.containers[0].readinessProbe: Required value: must specify a handler type');
    problems(pod({}, { readinessProbe: { exec: { command: ['a'] }, tcpSocket: { port: 80 } } }), 'spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type');
    problems(pod({}, { livenessProbe: { httpGet: { port: 'HTTP' } } }), 'spec.containers[0].livenessProbe.httpGet.port: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)', 'spec.containers[0].livenessProbe.httpGet.port: Invalid value: "HTTP": must contain at least one letter (a-z)');
    problems(pod({}, { livenessProbe: { tcpSocket: { port: 80 }, successThreshold: 2, timeoutSeconds: -1 } }), 'spec.containers[0].livenessProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0', 'spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1');
    problems(pod({}, { lifecycle: { preStop: { sleep: { seconds: 31 } } } }), 'spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 31: must be less than terminationGracePeriodSeconds');
    problems(pod({}, { livenessProbe: { httpGet: { port: 80, httpHeaders: [{ name: 'X Bad', value: 'v' }] } } }), /httpHeaders\[0\]\.name: Invalid value: "X Bad": a valid HTTP header must consist of alphanumeric characters or '-'/);
  });

  it('volumes and mounts', () => {
    const cm = (extra: Obj) => pod({ volumes: [{ name: 'v', configMap: { name: 'cm', ...extra } }] });
    problems(cm({ defaultMode: 0o1000 }), 'spec.volumes[0].configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive');
    problems(cm({ items: [{ key: 'k', path: '../x', mode: -1 }] }), `spec.volumes[0].configMap.items[0].path: Invalid value: "../x": must not contain '..'`, 'spec.volumes[0].configMap.items[0].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive');
    problems(pod({ volumes: [{ name: 'v', emptyDir: {}, hostPath: { path: '/x' } }] }), 'spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type');
    problems(pod({ volumes: [{ name: 'v', hostPath: { path: '/x', type: 'Dir' } }] }), /^spec\.volumes\[0\]\.hostPath\.type: Unsupported value: "Dir"/);
    problems(pod({ volumes: [{ name: 'v', secret: {} }] }), 'spec.volumes[0].secret.secretName: Required value');
    problems(pod({ volumes: [{ name: 'v', emptyDir: { sizeLimit: 'lots' } }] }), /^spec\.volumes\[0\]\.emptyDir\.sizeLimit: Invalid value: "lots": quantities must match/);
    problems(pod({ volumes: [{ name: 'v', projected: { sources: [{ serviceAccountToken: { path: 't', expirationSeconds: 60 } }] } }] }), /expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes/);
    problems(pod({ volumes: [{ name: 'v' }] }, { volumeMounts: [{ name: 'v', mountPath: '/a', subPath: '/etc' }, { name: 'v', mountPath: '/a' }] }), `spec.containers[0].volumeMounts[0].subPath: Invalid value: "/etc": must be a relative path`, 'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/a": must be unique');
    problems(pod({ volumes: [{ name: 'v' }] }, { volumeMounts: [{ name: 'v', mountPath: '/a', mountPropagation: 'Bidirectional' }] }), 'spec.containers[0].volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers');
  });

  it('pod-level fields', () => {
    problems(pod({ restartPolicy: 'Sometimes' }), 'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"');
    problems(pod({ terminationGracePeriodSeconds: -1 }), 'spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0');
    problems(pod({ activeDeadlineSeconds: 0 }), 'spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive');
    problems(pod({ dnsPolicy: 'None' }), 'spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None');
    problems(pod({ dnsConfig: { nameservers: ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4'] } }), 'spec.dnsConfig.nameservers: Invalid value: a list: must not have more than 3 nameservers');
    problems(pod({ hostAliases: [{ ip: 'localhost', hostnames: ['a'] }] }), 'spec.hostAliases[0].ip: Invalid value: "localhost": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)');
    problems(pod({ tolerations: [{ operator: 'Exists', value: 'x' }] }), `spec.tolerations[0].operator: Invalid value: "x": value must be empty when \`operator\` is 'Exists'`);
    problems(pod({ securityContext: { runAsUser: -1, sysctls: [{ name: 'a..b', value: '1' }] } }), 'spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive', /^spec\.securityContext\.sysctls\[0\]\.name: Invalid value: "a\.\.b": must have at most 253 characters and match regex/);
    problems(pod({ resourceClaims: [{ name: 'c' }] }), 'spec.resourceClaims: Forbidden: static pods may not use ResourceClaims');
    problems(pod({ volumes: [{ name: 'v', projected: { sources: [{ clusterTrustBundle: { path: 'b', name: 'n' } }] } }] }), 'spec.volumes[0].projected.sources[0].clusterTrustBundle: Forbidden: static pods may not use ClusterTrustBundle projected volume sources');
  });
});

describe('validatePod: hostile input', () => {
  it('never throws, whatever the input', () => {
    const proto = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}') as Obj;
    const inputs: unknown[] = [
      undefined, null, 0, NaN, 'pod', [], [pod()], {}, Object.create(null), proto,
      { metadata: [], spec: 'x' }, { metadata: { name: ['a'] }, spec: { containers: 'c' } },
      pod({ containers: [null, 1, 'x', [], {}, proto] }),
      pod({ volumes: [proto, { name: 'v', configMap: proto }] }),
      pod({}, { resources: { limits: proto, requests: { toString: '1', valueOf: 2, __proto__: 'x' } } }),
      pod({}, { env: [{ name: 'A', valueFrom: proto }], ports: [proto], livenessProbe: proto, lifecycle: { preStop: proto } }),
      pod({ securityContext: { sysctls: proto, supplementalGroups: [1e300, -1, 'x'] } }, {}, { labels: proto, annotations: proto }),
      new Proxy({}, { getOwnPropertyDescriptor: () => { throw new Error('boom'); } }),
    ];
    for (const input of inputs) {
      let out: string[] = [];
      assert.doesNotThrow(() => (out = validatePod(input)));
      assert.ok(Array.isArray(out));
    }
    assert.equal(({} as Obj).polluted, undefined, 'nothing reached Object.prototype');
    assert.match(validatePod(inputs[inputs.length - 1])[0]!, /internal error while validating the pod \(Error\); refusing it/);
  });

  it('lists at most 50 problems, then counts the rest', () => {
    const out = validatePod(pod({}, { args: Array(200).fill(1) }));
    assert.equal(out.length, MAX_REPORTED + 1);
    assert.equal(out[MAX_REPORTED], '... and 150 more problems');
  });

  it('quotes long values and keys cut, and escapes what is not printable', () => {
    const [p] = validatePod(pod({}, {}, { labels: { ['\u0000'.repeat(3) + 'k'.repeat(100)]: 'v' } }));
    assert.ok(p!.length < 1000, p);
    assert.ok(!/[^\x20-\x7e]/.test(p!), p);
  });
});
