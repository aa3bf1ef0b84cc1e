/**
 * Malformed static pod manifests, made from valid ones: every field of a rich pod with a value
 * of every wrong type, and seeded random mutations (truncations, alias bombs, huge numbers,
 * binary garbage and invalid UTF-8, deep nesting, very long names, duplicate keys, several
 * documents, BOMs, YAML tags, octal/hex/sexagesimal numbers, merge keys, prototype keys).
 *
 * Cases are text as a file would hold it. Values that JSON cannot write (YAML tags, aliases,
 * `.nan`, `0400`) are put in as raw YAML: the pod is written as JSON (which is YAML flow
 * style) with placeholders, and each placeholder replaced by its raw text.
 */
import yaml from 'js-yaml';
import { RICH_POD_YAML } from '../support/rich-pod-manifest.ts';
import { Rng } from './prng.ts';

export interface FuzzCase {
  /** Unique within a run; safe as a file name. */
  id: string;
  /** What was done to the manifest. */
  kind: string;
  text: string;
}

export type Path = ReadonlyArray<string | number>;

const MINIMAL_POD_YAML = `apiVersion: v1
kind: Pod
metadata:
  name: mini
spec:
  containers:
  - name: c
    image: busybox:1.36
    command: ["sleep", "3600"]
`;

/** Fields the rich pod leaves out: host network, env from ConfigMaps, DNS None, CSI, ... */
const OTHER_POD_YAML = `apiVersion: v1
kind: Pod
metadata:
  name: other
  generateName: other-
  finalizers: [example.com/cleanup]
  creationTimestamp: "2024-01-02T03:04:05Z"
spec:
  hostNetwork: true
  hostPID: false
  hostIPC: true
  dnsPolicy: None
  dnsConfig:
    nameservers: [10.0.0.10, "fd00::10"]
    searches: [example.com., cluster.local]
    options: [{name: edns0}]
  os: {name: linux}
  overhead: {cpu: 10m, memory: 1Mi}
  serviceAccountName: builder
  hostname: other-host
  subdomain: sub
  enableServiceLinks: false
  readinessGates: [{conditionType: example.com/ready}]
  imagePullSecrets: [{name: registry-creds}]
  securityContext:
    runAsNonRoot: true
    fsGroupChangePolicy: OnRootMismatch
    seccompProfile: {type: Localhost, localhostProfile: profiles/audit.json}
  tolerations:
  - {key: example.com/flaky, operator: Equal, value: "yes", effect: NoExecute, tolerationSeconds: 60}
  - {operator: Exists}
  volumes:
  - name: driver
    csi:
      driver: hostpath.csi.k8s.io
      readOnly: true
      volumeAttributes: {size: 1Gi}
      nodePublishSecretRef: {name: csi-secret}
  - name: artifact
    image: {reference: "registry.local/artifact:v1", pullPolicy: IfNotPresent}
  - name: huge
    emptyDir: {medium: HugePages-2Mi}
  - name: token
    projected:
      defaultMode: 256
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3600, audience: api}
      - secret: {name: s, items: [{key: a, path: sub/a, mode: 384}]}
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, "exec sleep 3600"]
    ports:
    - {name: metrics, containerPort: 9100, hostPort: 9100, protocol: TCP, hostIP: 127.0.0.1}
    - {containerPort: 5353, protocol: UDP}
    envFrom:
    - configMapRef: {name: env-config, optional: true}
      prefix: CFG_
    - secretRef: {name: env-secret}
    env:
    - name: FROM_CM
      valueFrom: {configMapKeyRef: {name: cm, key: some.key, optional: true}}
    - name: FROM_SECRET
      valueFrom: {secretKeyRef: {name: sec, key: token}}
    - name: LABEL
      valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']", apiVersion: v1}}
    - name: CPU
      valueFrom: {resourceFieldRef: {containerName: main, resource: requests.cpu, divisor: 1m}}
    resources:
      requests: {cpu: "0.5", memory: 128974848, example.com/gpu: 1, hugepages-2Mi: 4Mi}
      limits: {cpu: 2, memory: 129e6, example.com/gpu: 1, hugepages-2Mi: 4Mi}
    resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]
    livenessProbe:
      httpGet: {port: 9100, path: /metrics, scheme: HTTPS, host: 127.0.0.1}
      terminationGracePeriodSeconds: 10
    lifecycle:
      preStop:
        httpGet: {port: metrics, path: /quit}
    securityContext:
      privileged: true
      procMount: Default
      seccompProfile: {type: RuntimeDefault}
      appArmorProfile: {type: Unconfined}
    volumeMounts:
    - {name: driver, mountPath: /driver, mountPropagation: Bidirectional}
    - {name: artifact, mountPath: /artifact, readOnly: true, recursiveReadOnly: Enabled}
    - {name: token, mountPath: /token, subPathExpr: $(POD_NAME)}
    - {name: huge, mountPath: /huge}
    stdinOnce: true
    workingDir: /tmp
`;

/** The valid manifests the cases start from (the rich pod also as JSON). */
export const BASE_TEXTS: readonly string[] = [RICH_POD_YAML, MINIMAL_POD_YAML, OTHER_POD_YAML, JSON.stringify(yaml.load(RICH_POD_YAML), null, 1)];

/** The pods every field of which the sweep replaces. */
const SWEEP_BASES: readonly string[] = [RICH_POD_YAML, OTHER_POD_YAML];

/** The rich pod as a plain object (read as 1.2 and 1.1 read it alike: see its comment). */
export function richPod(): Record<string, unknown> {
  return yaml.load(RICH_POD_YAML) as Record<string, unknown>;
}

/** Every path of `value`: each map field, list item and leaf, parents before children. */
export function fieldPaths(value: unknown, prefix: Path = []): Path[] {
  const out: Path[] = [];
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push([...prefix, i], ...fieldPaths(v, [...prefix, i]));
    });
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) out.push([...prefix, k], ...fieldPaths(v, [...prefix, k]));
  }
  return out;
}

export const pathText = (p: Path) => p.map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('').replace(/^\./, '');

const DELETE = Symbol('delete');

/** A deep copy of `root` with the value at `path` replaced (or deleted). */
export function withValueAt(root: unknown, path: Path, value: unknown): unknown {
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let node = copy;
  for (const seg of path.slice(0, -1)) node = node[seg] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (value === DELETE) {
    if (Array.isArray(node)) node.splice(last as number, 1);
    else delete node[last];
  } else {
    node[last] = value;
  }
  return copy;
}

/** Wrong-typed and out-of-range values, each put at every field of the rich pod. */
export const REPLACEMENTS: ReadonlyArray<{ name: string; value: unknown }> = [
  { name: 'deleted', value: DELETE },
  { name: 'null', value: null },
  { name: 'zero', value: 0 },
  { name: 'number', value: 42 },
  { name: 'negative', value: -1 },
  { name: 'fraction', value: 1.5 },
  { name: 'huge', value: 1e300 },
  { name: 'string', value: 'str' },
  { name: 'empty-string', value: '' },
  { name: 'nan-string', value: 'NaN' },
  { name: 'inf-string', value: '-Infinity' },
  { name: 'overflow-string', value: '1e400' },
  { name: 'traversal', value: '../../etc' },
  { name: 'long-string', value: 'x'.repeat(300) },
  { name: 'boolean', value: true },
  { name: 'empty-list', value: [] },
  { name: 'list', value: [1, 'a', null, { b: 2 }] },
  { name: 'empty-map', value: {} },
  { name: 'map', value: { a: 1, b: [true], constructor: 'x', toString: 1 } },
];

/** Serialises an object, then swaps the placeholders for raw YAML. */
function render(obj: unknown, raws: readonly string[], rng?: Rng): string {
  let text = rng && rng.chance(0.5) ? yaml.dump(obj, { lineWidth: -1, noRefs: true }) : JSON.stringify(obj, null, rng?.chance(0.5) ? 1 : undefined);
  raws.forEach((raw, i) => {
    // Quoted by either writer: "FUZZ_RAW_0", or plain in the YAML form.
    text = text.replace(new RegExp(`"FUZZ_RAW_${i}"|'FUZZ_RAW_${i}'|FUZZ_RAW_${i}\\b`), () => raw);
  });
  return text;
}

/**
 * The replacements every field gets in the sweep: absent, null, each JSON type, and the
 * values that break numbers and paths (the random cases draw from all of REPLACEMENTS).
 */
const SWEEP = ['deleted', 'null', 'number', 'negative', 'huge', 'string', 'nan-string', 'traversal', 'list', 'map'];

/** The sweep: every field path of the rich pod × each SWEEP replacement, deterministic. */
export function typeSweepCases(): FuzzCase[] {
  const cases: FuzzCase[] = [];
  const replacements = REPLACEMENTS.filter((r) => SWEEP.includes(r.name));
  for (const text of SWEEP_BASES) {
    const base = yaml.load(text) as Record<string, unknown>;
    const pod = (base.metadata as { name: string }).name;
    for (const path of fieldPaths(base)) {
      for (const r of replacements) {
        const obj = withValueAt(base, path, r.value);
        // The rich pod's kinds have no prefix: the sweep's assertions name them.
        const kind = `${r.name} at ${pod === 'rich' ? '' : `${pod}:`}${pathText(path)}`;
        cases.push({ id: `sweep-${cases.length}`, kind, text: JSON.stringify(obj) });
      }
    }
  }
  return cases;
}

// --- alias bombs -------------------------------------------------------------------------

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** Anchor definitions (a flow map) whose last anchor expands exponentially; returns [defs, last alias]. */
function bombAnchors(shape: string, levels: number, fan: number): [string, string] {
  const defs: string[] = [];
  const name = (i: number) => `${LETTERS[i % 26]}${Math.floor(i / 26) || ''}`;
  switch (shape) {
    case 'list':
      defs.push(`"l0": &${name(0)} [${Array(fan).fill('"lol"').join(',')}]`);
      for (let i = 1; i < levels; i++) defs.push(`"l${i}": &${name(i)} [${Array(fan).fill(`*${name(i - 1)}`).join(',')}]`);
      break;
    case 'map':
      defs.push(`"l0": &${name(0)} {${Array.from({ length: fan }, (_, k) => `"k${k}": "v"`).join(',')}}`);
      for (let i = 1; i < levels; i++) defs.push(`"l${i}": &${name(i)} {${Array.from({ length: fan }, (_, k) => `"k${k}": *${name(i - 1)}`).join(',')}}`);
      break;
    case 'string': {
      defs.push(`"l0": &${name(0)} "${'x'.repeat(64 * 1024)}"`);
      defs.push(`"l1": &${name(1)} [${Array(fan * 10).fill(`*${name(0)}`).join(',')}]`);
      levels = 2;
      break;
    }
    case 'wide': {
      defs.push(`"l0": &${name(0)} [${Array(40_000).fill('1').join(',')}]`);
      defs.push(`"l1": &${name(1)} [${Array(fan * 20).fill(`*${name(0)}`).join(',')}]`);
      levels = 2;
      break;
    }
    case 'deep': {
      // Each level nests the last 60 deep: within the parser's depth limit per anchor, not expanded.
      defs.push(`"l0": &${name(0)} ${'['.repeat(60)}${']'.repeat(60)}`);
      for (let i = 1; i < levels; i++) defs.push(`"l${i}": &${name(i)} ${'['.repeat(60)}*${name(i - 1)}${']'.repeat(60)}`);
      break;
    }
    default: {
      // merge: a large map merged into many maps.
      defs.push(`"l0": &${name(0)} {${Array.from({ length: 3000 }, (_, k) => `"k${k}": ${k}`).join(',')}}`);
      defs.push(`"l1": &${name(1)} [${Array.from({ length: fan * 10 }, () => `{"<<": *${name(0)}}`).join(',')}]`);
      levels = 2;
    }
  }
  return [`{${defs.join(',')}}`, `*${name(levels - 1)}`];
}

export const BOMB_SHAPES = ['list', 'map', 'string', 'wide', 'deep', 'merge'] as const;
/** Where a bomb goes off: fields the kubelet reads, and a field it drops. */
export const BOMB_PLACES: readonly Path[] = [
  ['spec', 'containers', 0, 'command'],
  ['spec', 'containers', 0, 'args'],
  ['spec', 'containers', 0, 'env'],
  ['spec', 'nodeSelector'],
  ['metadata', 'finalizers'],
  ['metadata', 'labels'],
  ['metadata', 'annotations'],
  ['spec', 'volumes'],
  ['spec', 'unknownField'],
];

/** A manifest with an alias bomb of `shape` at `place` (the anchors in an unknown first field). */
export function aliasBomb(shape: string, place: Path, levels = 9, fan = 9): FuzzCase {
  const [defs, alias] = bombAnchors(shape, levels, fan);
  const pod = withValueAt(MINIMAL_POD_OBJECT, place, 'FUZZ_RAW_1');
  const text = render({ 'x-anchors': 'FUZZ_RAW_0', ...(pod as object) }, [defs, alias]);
  return { id: `bomb-${shape}-${pathText(place).replace(/[^a-z0-9]+/gi, '-')}`, kind: `${shape} alias bomb at ${pathText(place)}`, text };
}

const MINIMAL_POD_OBJECT = yaml.load(MINIMAL_POD_YAML) as Record<string, unknown>;

/** Every bomb shape at every place. */
export function aliasBombCases(): FuzzCase[] {
  return BOMB_SHAPES.flatMap((shape) => BOMB_PLACES.map((place) => aliasBomb(shape, place)));
}

// --- random mutations ----------------------------------------------------------------------

const HUGE_NUMBERS = ['1e308', '1e400', '-1e400', '99999999999999999999', '-9223372036854775809', '9223372036854775807', '0x7FFFFFFFFFFFFFFF', '0xFFFFFFFFFFFFFFFFFFFF', '9007199254740993', '.inf', '-.inf', '.nan', '.NaN', '2147483648', '-2147483649', '4294967296', '1e-400'];
const NUMBER_FORMS = ['0400', '0600', '0777', '0o644', '0x1F', '0b101', '1_000', '190:20:30', '22:22', '08', '+12', '-0', '1.', '.5', '1e3', '0777777777777777777777', '0x', '0b', '1__0', '_1', '1_'];
const TAGGED = [
  '!!binary aGVsbG8=', '!!binary "%%%"', '!!binary //79', '!!python/object:os.system {"a": 1}', '!!python/object/apply:os.system ["ls"]',
  '!custom x', '!custom {"a": 1}', '!!int "12"', '!!int "x"', '!!float "1.5"', '!!set {"a": null}', '!!omap [{"a": 1}]',
  '!!timestamp 2001-12-14', '!<tag:example.com,2000:x> 1', '!!str 123', '!!null ""', '!!bool yes', '!!map {}', '!!seq []', '! 12', '!!merge <<',
];
const YAML_WORDS = ['yes', 'no', 'on', 'off', 'y', 'n', 'Y', 'NO', '~', 'null', 'Null', 'true', 'False', '2001-12-14T21:59:43.10-05:00', '2001-12-14'];
const PROTO_KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'prototype', 'valueOf', '__defineGetter__'];
const LONG_LENGTHS = [63, 64, 253, 254, 4097, 10_000, 300 * 1024];

type Mutator = (rng: Rng) => { kind: string; text: string };

const basePick = (rng: Rng) => rng.pick(BASE_TEXTS);

/** A random field path of the rich pod, maybe restricted to values of one type. */
function randomPath(rng: Rng, filter?: (v: unknown) => boolean): Path {
  const base = richPod();
  const paths = fieldPaths(base).filter((p) => !filter || filter(p.reduce<unknown>((n, s) => (n as Record<string | number, unknown>)[s], base)));
  return rng.pick(paths);
}

/** The rich pod with raw YAML at a random path of the given kind. */
function rawAt(rng: Rng, raw: string, filter?: (v: unknown) => boolean): { path: Path; text: string } {
  const path = randomPath(rng, filter);
  return { path, text: render(withValueAt(richPod(), path, 'FUZZ_RAW_0'), [raw], rng) };
}

const MUTATORS: Record<string, Mutator> = {
  truncate: (rng) => {
    const bytes = Buffer.from(basePick(rng), 'utf8');
    const at = rng.int(0, bytes.length);
    return { kind: `truncated at byte ${at}`, text: bytes.subarray(0, at).toString('utf8') };
  },
  wrongType: (rng) => {
    const path = randomPath(rng);
    const r = rng.pick(REPLACEMENTS);
    return { kind: `${r.name} at ${pathText(path)}`, text: render(withValueAt(richPod(), path, r.value), [], rng) };
  },
  aliasBomb: (rng) => {
    const shape = rng.pick(BOMB_SHAPES);
    const place = rng.pick(BOMB_PLACES);
    const c = aliasBomb(shape, place, rng.int(2, 10), rng.int(2, 12));
    return { kind: c.kind, text: c.text };
  },
  hugeNumber: (rng) => {
    const raw = rng.pick(HUGE_NUMBERS);
    const { path, text } = rawAt(rng, raw, (v) => typeof v === 'number');
    return { kind: `${raw} at ${pathText(path)}`, text };
  },
  garbage: (rng) => {
    const junk = rng.bytes(rng.int(0, 4096));
    if (rng.chance(0.5)) return { kind: 'binary garbage', text: junk.toString('utf8') };
    const base = Buffer.from(basePick(rng), 'utf8');
    const at = rng.int(0, base.length);
    return { kind: `binary garbage spliced at byte ${at}`, text: Buffer.concat([base.subarray(0, at), junk.subarray(0, 64), base.subarray(at)]).toString('utf8') };
  },
  invalidUtf8: (rng) => {
    const base = Buffer.from(basePick(rng), 'utf8');
    const bad = rng.pick([[0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x00], [0x1b, 0x5b, 0x32, 0x4a]]);
    const at = rng.int(0, base.length);
    return { kind: `bytes ${bad.map((b) => b.toString(16)).join(' ')} at byte ${at}`, text: Buffer.concat([base.subarray(0, at), Buffer.from(bad), base.subarray(at)]).toString('utf8') };
  },
  deepNesting: (rng) => {
    const n = rng.pick([50, 98, 99, 100, 101, 1000, 100_000, 1_000_000]);
    const style = rng.pick(['flow-list', 'flow-map', 'block-list', 'block-map']);
    const raw =
      style === 'flow-list' ? `${'['.repeat(n)}${']'.repeat(n)}`
      : style === 'flow-map' ? `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`
      : '';
    if (raw) {
      const { path, text } = rawAt(rng, raw);
      return { kind: `${style} nested ${n} deep at ${pathText(path)}`, text };
    }
    // Block styles cannot sit inside JSON: a whole document of them.
    const depth = Math.min(n, 3000);
    const text = style === 'block-list' ? `${'- '.repeat(depth)}x\n` : Array.from({ length: depth }, (_, i) => `${' '.repeat(i)}a:`).join('\n');
    return { kind: `${style} nested ${depth} deep`, text: `${RICH_POD_YAML}extra:\n${text.replace(/^/gm, '  ')}\n` };
  },
  longString: (rng) => {
    const len = rng.pick(LONG_LENGTHS);
    const s = rng.pick(['a', 'A', '-', '.', 'é', '😀']).repeat(len);
    const where = rng.pick(['name', 'labelKey', 'labelValue', 'annotation', 'containerName', 'image', 'any']);
    const pod = richPod() as { metadata: Record<string, Record<string, string>> } & Record<string, unknown>;
    if (where === 'labelKey') pod.metadata.labels![s] = 'v';
    else if (where === 'labelValue') pod.metadata.labels!.app = s;
    else if (where === 'annotation') pod.metadata.annotations!.big = s;
    else if (where === 'name') (pod.metadata as Record<string, unknown>).name = s;
    else if (where === 'containerName' || where === 'image') {
      ((pod.spec as { containers: Array<Record<string, unknown>> }).containers[0]!)[where === 'image' ? 'image' : 'name'] = s;
    } else return { kind: `${len}-character string`, text: render(withValueAt(pod, randomPath(rng, (v) => typeof v === 'string'), s), [], rng) };
    return { kind: `${len}-character ${where}`, text: render(pod, [], rng) };
  },
  duplicateKey: (rng) => {
    const lines = RICH_POD_YAML.split('\n');
    const candidates = lines.map((l, i) => [l, i] as const).filter(([l]) => /^\s*[-\w.]+: /.test(l));
    const [line, i] = rng.pick(candidates);
    lines.splice(i + 1, 0, line.replace(/^(\s*)- /, '$1  '));
    return { kind: `duplicate key line ${i + 1}`, text: lines.join('\n') };
  },
  multiDoc: (rng) => {
    const a = basePick(rng);
    const form = rng.int(0, 5);
    const text = [`${a}\n---\n${a}`, `---\n---\n${a}`, `${a}\n---\n~\n`, `${a}\n...\n---\n${MINIMAL_POD_YAML}`, `--- ${JSON.stringify(richPod())}\n--- 1\n`, `${a}\n---\n- [oops\n`][form]!;
    return { kind: `several documents (form ${form})`, text };
  },
  bom: (rng) => {
    const a = basePick(rng);
    const form = rng.int(0, 3);
    const text = [`\ufeff${a}`, `\ufeff\ufeff${a}`, `${a.slice(0, a.length >> 1)}\ufeff${a.slice(a.length >> 1)}`, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(a, 'utf16le')]).toString('utf8')][form]!;
    return { kind: `BOM (form ${form})`, text };
  },
  tag: (rng) => {
    const raw = rng.pick(TAGGED);
    const { path, text } = rawAt(rng, raw);
    return { kind: `${raw} at ${pathText(path)}`, text };
  },
  numberForm: (rng) => {
    const raw = rng.pick([...NUMBER_FORMS, ...YAML_WORDS]);
    const { path, text } = rawAt(rng, raw, (v) => typeof v === 'number' || typeof v === 'string');
    return { kind: `${raw} at ${pathText(path)}`, text };
  },
  mergeKey: (rng) => {
    const form = rng.int(0, 5);
    const container = ['{"<<": *base, "name": "merged"}', '{"<<": [*base, *base], "name": "m2"}', '{"<<": 1, "name": "m3", "image": "x"}', '{"<<": [1, "a"], "name": "m4", "image": "x"}', `{"<<": [${Array(101).fill('*base').join(',')}]}`, '{"<<": *base, "<<": *base}'][form]!;
    const pod = richPod() as { spec: { containers: unknown[] } } & Record<string, unknown>;
    pod.spec.containers.push('FUZZ_RAW_1');
    const text = render({ 'x-base': 'FUZZ_RAW_0', ...pod }, ['&base {"name": "base", "image": "busybox:1.36", "command": ["true"]}', container]);
    return { kind: `merge key (form ${form})`, text };
  },
  protoKey: (rng) => {
    const key = rng.pick(PROTO_KEYS);
    const value = rng.pick<unknown>(['x', 1, null, { polluted: true }, ['a'], '1', '100m']);
    const targets: Path[] = [['metadata', 'labels'], ['metadata', 'annotations'], ['spec', 'nodeSelector'], ['spec', 'containers', 0, 'resources', 'limits'], ['spec', 'containers', 0, 'resources', 'requests'], ['spec'], ['metadata'], ['spec', 'containers', 0], ['spec', 'volumes', 0], []];
    const target = rng.pick(targets);
    // JSON.stringify writes an own `__proto__` key as text, which the parser reads back as a key.
    const pod = richPod();
    const node = target.reduce<Record<string | number, unknown>>((n, s) => n[s] as Record<string | number, unknown>, pod);
    Object.defineProperty(node, key, { value, enumerable: true, configurable: true, writable: true });
    return { kind: `key ${key} in ${pathText(target) || 'the root'}`, text: JSON.stringify(pod) };
  },
};

export const MUTATOR_NAMES = Object.keys(MUTATORS);

/** Case `index` of the run with `seed`: reproducible alone. */
export function randomCase(seed: number, index: number): FuzzCase {
  const rng = new Rng(seed, index);
  const name = MUTATOR_NAMES[index % MUTATOR_NAMES.length]!;
  const { kind, text } = MUTATORS[name]!(rng);
  return { id: `r${index}-${name}`, kind: `${name}: ${kind}`, text };
}
