import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { anchorsOf, brokenLinks, githubAnchor, projectMarkdown } from '../../tools/docs-links.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('docs links', function () {
  it('every relative link of the README, docs/ and the plugins\' READMEs names a file that exists and a heading it has', function () {
    const files = projectMarkdown(ROOT);
    assert.ok(files.includes('README.md') && files.includes('docs/plugins.md') && files.includes('plugins/cni-exec/README.md'), files.join(', '));
    const broken = files.flatMap((f) => brokenLinks(ROOT, f, readFileSync(path.join(ROOT, f), 'utf8')));
    assert.deepEqual(broken, [], `broken links:\n${broken.join('\n')}`);
  });

  it('the README stays short, with the two commands first', function () {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    assert.ok(Buffer.byteLength(readme) < 25_000, `README.md is ${Buffer.byteLength(readme)} bytes: move sections under docs/`);
    assert.match(readme, /^# kubelet-ts\n[^#]*\n## Two commands\n/);
  });

  it('each docs file starts with its title and a table of contents when it has sections', function () {
    for (const f of projectMarkdown(ROOT).filter((f) => f.startsWith('docs/'))) {
      const text = readFileSync(path.join(ROOT, f), 'utf8');
      assert.match(text, /^# \S/, `${f} starts with its title`);
      if (/\n## /.test(text)) assert.match(text.split('\n## ')[0]!, /\nContents:\n\n- \[/, `${f} has a table of contents before its first section`);
    }
  });

  describe('the checker', function () {
    it('makes anchors as GitHub does', function () {
      assert.equal(githubAnchor('The kubelet API: the main port, the read-only port, the local socket'), 'the-kubelet-api-the-main-port-the-read-only-port-the-local-socket');
      assert.equal(githubAnchor('As a node of a cluster (API-server mode)'), 'as-a-node-of-a-cluster-api-server-mode');
      assert.equal(githubAnchor('`CrashLoopBackOff`, `Error`, `OOMKilled`'), 'crashloopbackoff-error-oomkilled');
      assert.equal(githubAnchor('snake_case and [a link](x.md)'), 'snake_case-and-a-link');
      assert.deepEqual([...anchorsOf('# T\n## Notes\n```sh\n# not a heading\n```\n## Notes\n')], ['t', 'notes', 'notes-1']);
    });

    it('reports a missing file, a missing heading and a same-file anchor that does not exist, and passes good links', function () {
      // As if the fixture were docs/fixture.md: its links resolve from docs/.
      const fixture = [
        '# Fixture',
        '## Here',
        'Good: [ops](operating/README.md), [section](plugins.md#writing-a-plugin), [here](#here),',
        '[a plugin](../plugins/cni-exec/README.md), [site](https://example.com/x.md#y), `[code](nope.md)`.',
        'Bad: [gone](operating/nope.md), [moved](../README.md#writing-a-plugin), [typo](#hre),',
        '[old path](plugins/cni-exec/README.md).',
        '```',
        '[in a code block](nope.md)',
        '```',
      ].join('\n');
      assert.deepEqual(brokenLinks(ROOT, 'docs/fixture.md', fixture), [
        'docs/fixture.md:5: operating/nope.md: no file docs/operating/nope.md',
        'docs/fixture.md:5: ../README.md#writing-a-plugin: no heading #writing-a-plugin in README.md',
        'docs/fixture.md:5: #hre: no heading #hre in docs/fixture.md',
        'docs/fixture.md:6: plugins/cni-exec/README.md: no file docs/plugins/cni-exec/README.md',
      ]);
    });
  });
});
