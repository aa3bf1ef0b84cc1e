import assert from 'node:assert/strict';
import { imageMatches, imagePatternProblem, imageRepository } from '../../core/credentials/image-match.ts';
import { keyringLookup } from '../../core/credentials/keyring.ts';

/**
 * Upstream's matchImages rules (pkg/credentialprovider URLsMatch, the cases of its
 * keyring_test.go) and image repository names (ParseImageName), as credential providers see them.
 */
describe('image matching for credential providers', function () {
  const cases: Array<[string, string, boolean]> = [
    // `*` globs one domain label, anywhere in the host.
    ['*.kubernetes.io', 'prefix.kubernetes.io', true],
    ['prefix.*.io', 'prefix.kubernetes.io', true],
    ['prefix.kubernetes.*', 'prefix.kubernetes.io', true],
    ['*-good.kubernetes.io', 'prefix-good.kubernetes.io', true],
    ['*.*.registry.io', 'a.b.registry.io', true],
    ['reg[0-9].example.com', 'reg7.example.com', true],
    ['reg[0-9].example.com', 'regx.example.com', false],
    ['reg?.example.com', 'reg7.example.com', false], // `?` starts a query (as Go's url.Parse reads it): the pattern is `reg`, one label
    // The path of the pattern is a string prefix of the image's.
    ['kubernetes.io/path', 'kubernetes.io/path', true],
    ['kubernetes.io/path', 'kubernetes.io/path/subpath', true],
    ['kubernetes.io/path', 'kubernetes.io/pathology', true],
    ['*.kubernetes.io/path', 'prefix.kubernetes.io/path/subpath', true],
    ['kubernetes.io/path/subpath', 'kubernetes.io/path', false],
    ['kubernetes.io/path', 'kubernetes.io', false],
    // Ports must be equal.
    ['kubernetes.io:1111/path', 'kubernetes.io:1111/path', true],
    ['*.kubernetes.io:1111/path', 'prefix.kubernetes.io:1111/path', true],
    ['prefix.*.io:1111/path', 'prefix.kubernetes.io:1111/path', true],
    ['127.0.0.1:5000', '127.0.0.1:5000/kubelet-ts/busybox', true],
    ['127.0.0.1', '127.0.0.1:5000/kubelet-ts/busybox', false],
    ['kubernetes.io:1111', 'kubernetes.io:2222', false],
    ['*.kubernetes.io', 'prefix.kubernetes.io:1111/path', false],
    // The number of labels must be equal: `*` never spans a dot, and never matches nothing.
    ['*.kubernetes.io', 'kubernetes.io', false],
    ['*.kubernetes.io', 'a.b.kubernetes.io', false],
    ['*.kubernetes.io', 'kubernetes.io/path', false],
    ['*', 'docker.io/library/busybox', false],
    ['*.*', 'docker.io/library/busybox', true],
    ['docker.io', 'docker.io/library/busybox', true],
    // Case-sensitive, as Go's filepath.Match.
    ['Registry.example.com', 'registry.example.com/x', false],
    // A malformed glob matches nothing.
    ['reg[.example.com', 'reg[.example.com/x', false],
  ];
  for (const [pattern, image, expected] of cases) {
    it(`${pattern} ${expected ? 'matches' : 'does not match'} ${image}`, function () {
      assert.equal(imageMatches(pattern, image), expected);
    });
  }

  it('refuses matchImages entries that are no URL, as upstream validates them', function () {
    assert.equal(imagePatternProblem('*.azurecr.io'), undefined);
    assert.equal(imagePatternProblem('foo.registry.io:8080/path'), undefined);
    assert.equal(imagePatternProblem('[::1]:5000'), undefined);
    assert.match(imagePatternProblem('registry.io:port')!, /invalid port ":port" after host/);
    assert.match(imagePatternProblem('bad host.io')!, /invalid character " " in host name/);
    assert.match(imagePatternProblem('[::1')!, /missing '\]' in host/);
    assert.match(imagePatternProblem('reg\tistry.io')!, /control character/);
    assert.match(imagePatternProblem('registry.io/%zz')!, /invalid URL escape/);
  });

  it('names an image by its repository as upstream hands it to providers: registry, path, no tag or digest', function () {
    assert.equal(imageRepository('busybox'), 'docker.io/library/busybox');
    assert.equal(imageRepository('busybox:1.36'), 'docker.io/library/busybox');
    assert.equal(imageRepository('team/app:v1'), 'docker.io/team/app');
    assert.equal(imageRepository('index.docker.io/team/app'), 'docker.io/team/app');
    assert.equal(imageRepository('docker.io/busybox'), 'docker.io/library/busybox');
    assert.equal(imageRepository('127.0.0.1:5000/kubelet-ts/busybox:1.35'), '127.0.0.1:5000/kubelet-ts/busybox');
    assert.equal(imageRepository('localhost/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'), 'localhost/app');
    assert.equal(imageRepository('123456789.dkr.ecr.us-east-1.amazonaws.com/app:1'), '123456789.dkr.ecr.us-east-1.amazonaws.com/app');
    assert.equal(imageRepository('Registry/app'), 'Registry/app', 'a first component with capitals is a registry, as docker reads it');
  });
});

describe('keyring of provider answers (upstream BasicDockerKeyring)', function () {
  const auth = (entries: Record<string, string>) => new Map(Object.entries(entries).map(([k, user]) => [k, { username: user, password: 'p' }]));

  it('gives every matching key\'s credentials, the more specific paths first (reverse lexical order)', function () {
    const creds = keyringLookup('quay.io/coreos/etcd', [{ from: 'a', auth: auth({ 'quay.io': 'host', 'quay.io/coreos': 'team', 'quay.io/other': 'no', 'gcr.io': 'no' }) }]);
    assert.deepEqual(creds.map((c) => c.username), ['team', 'host']);
  });

  it('drops a scheme and the registry API root (/v1/, /v2/) from keys, and leaves out keys that do not parse', function () {
    const creds = keyringLookup('registry.example.com/app', [{ from: 'a', auth: auth({ 'https://registry.example.com/v2/': 'v2', 'http://registry.example.com': 'http', 'bad host': 'no' }) }]);
    assert.deepEqual(creds.map((c) => c.username).sort(), ['http', 'v2']);
  });

  it('keeps the providers\' order for one key, and names each credential\'s provider', function () {
    const creds = keyringLookup('r.io/app', [{ from: 'first', auth: auth({ 'r.io': 'one' }) }, { from: 'second', auth: auth({ 'r.io': 'two' }) }]);
    assert.deepEqual(creds.map((c) => [c.from, c.username, c.password]), [['first', 'one', 'p'], ['second', 'two', 'p']]);
  });

  it('globs in keys match as in matchImages; a Docker Hub image falls back to the legacy index.docker.io key', function () {
    assert.deepEqual(keyringLookup('a.example.com/x', [{ from: 'a', auth: auth({ '*.example.com': 'glob' }) }]).map((c) => c.username), ['glob']);
    assert.deepEqual(keyringLookup('docker.io/library/busybox', [{ from: 'a', auth: auth({ 'index.docker.io': 'hub' }) }]).map((c) => c.username), ['hub']);
    assert.deepEqual(keyringLookup('quay.io/x', [{ from: 'a', auth: auth({ 'index.docker.io': 'hub' }) }]), []);
  });
});
