import assert from 'node:assert/strict';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { imageRegistry, pullCredentials } from '../../core/pod/pull-credentials.ts';
import type { ObjectSource } from '../../core/apiserver/object-cache.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const dockerconfigjson = (auths: object): V1Secret => ({ type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) } });
const pod = (...names: string[]): V1Pod => ({ metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [], imagePullSecrets: names.map((name) => ({ name })) } });
const objects = (secrets: Record<string, V1Secret>): ObjectSource => ({ configMap: async () => undefined, secret: async (_ns, name) => secrets[name] });

describe('image pull credentials (docker config → CRI auth)', function () {
  it('resolves an image reference to its registry and repository as docker does', function () {
    assert.deepEqual(imageRegistry('busybox:1.36'), { host: 'docker.io', path: '/library/busybox' });
    assert.deepEqual(imageRegistry('me/app@sha256:abc'), { host: 'docker.io', path: '/me/app' });
    assert.deepEqual(imageRegistry('127.0.0.1:5000/team/app:v1'), { host: '127.0.0.1:5000', path: '/team/app' });
    assert.deepEqual(imageRegistry('localhost/app'), { host: 'localhost', path: '/app' });
    assert.deepEqual(imageRegistry('index.docker.io/library/nginx'), { host: 'docker.io', path: '/library/nginx' });
  });

  it('matches keys by host (with * globs), port and path prefix; the most specific first; auth split into user and password', async function () {
    const s = dockerconfigjson({
      'https://registry.example.com': { auth: b64('any:one') },
      'registry.example.com/team': { username: 'team', password: 'two' },
      '*.example.com': { auth: b64('glob:three') },
      'registry.example.com:5000': { auth: b64('port:four') },
      'https://index.docker.io/v1/': { auth: b64('hub:five') },
    });
    const { credentials, problems } = await pullCredentials(pod('s'), 'registry.example.com/team/app:1', objects({ s }));
    assert.deepEqual(problems, []);
    assert.deepEqual(credentials.map((c) => `${c.username}:${c.password}`), ['team:two', 'any:one', 'glob:three']);
    assert.equal(credentials[0]!.serverAddress, 'https://registry.example.com');
    const hub = await pullCredentials(pod('s'), 'nginx', objects({ s }));
    assert.deepEqual(hub.credentials.map((c) => c.username), ['hub']);
    const none = await pullCredentials(pod('s'), 'other.io/app', objects({ s }));
    assert.deepEqual(none.credentials, []);
  });

  it('reads the old .dockercfg form too', async function () {
    const old: V1Secret = { type: 'kubernetes.io/dockercfg', data: { '.dockercfg': b64(JSON.stringify({ 'quay.io': { auth: b64('q:w') } })) } };
    const { credentials } = await pullCredentials(pod('old'), 'quay.io/x/y', objects({ old }));
    assert.deepEqual(credentials.map((c) => [c.username, c.password]), [['q', 'w']]);
  });

  it('names each secret it cannot use: missing, not JSON, no auths; the others still count', async function () {
    const secrets = {
      good: dockerconfigjson({ 'r.io': { auth: b64('u:p') } }),
      garbled: { type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{not json') } },
      empty: { type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{}') } },
      nokey: { data: { other: b64('x') } },
    };
    const { credentials, problems } = await pullCredentials(pod('gone', 'garbled', 'empty', 'nokey', 'good'), 'r.io/app', objects(secrets));
    assert.deepEqual(credentials.map((c) => c.from), ['good']);
    assert.equal(problems.length, 4);
    assert.match(problems[0]!, /image pull secret "gone" not found/);
    assert.match(problems[1]!, /"garbled" holds a docker config that is not JSON/);
    assert.match(problems[2]!, /"empty": the docker config has no "auths" map/);
    assert.match(problems[3]!, /"nokey" has no \.dockerconfigjson or \.dockercfg key/);
  });
});
