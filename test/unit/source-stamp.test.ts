import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sourceStamp } from '../../bin/source-stamp.mjs';

/**
 * bin/kubelet-ts.mjs runs the compiled build only while the sources have the stamp recorded at
 * build time: any edit, new file or deleted file must change it, and nothing else may.
 */
describe('source stamp (when the compiled build is stale)', function () {
  let root: string;
  const stamp = (): string => sourceStamp(root);

  beforeEach(async function () {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-stamp-'));
    await fs.mkdir(path.join(root, 'core', 'pod'), { recursive: true });
    await fs.mkdir(path.join(root, 'plugins', 'x'), { recursive: true });
    await fs.writeFile(path.join(root, 'core', 'pod', 'a.ts'), 'export const a = 1;\n');
    await fs.writeFile(path.join(root, 'plugins', 'x', 'index.ts'), 'export default {};\n');
    await fs.writeFile(path.join(root, 'kubelet.config.ts'), 'export default {};\n');
  });

  afterEach(async function () {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('is the same for the same tree', function () {
    assert.equal(stamp(), stamp());
  });

  it('changes with an edit, an added file, a deleted file and an older file put back', async function () {
    const seen = new Set([stamp()]);
    const a = path.join(root, 'core', 'pod', 'a.ts');
    await fs.writeFile(a, 'export const a = 2;\n');
    seen.add(stamp());
    await fs.writeFile(path.join(root, 'plugins', 'x', 'new.ts'), '');
    seen.add(stamp());
    await fs.rm(path.join(root, 'plugins', 'x', 'new.ts'));
    await fs.rm(path.join(root, 'kubelet.config.ts'));
    seen.add(stamp());
    await fs.utimes(a, new Date('2020-01-01'), new Date('2020-01-01'));
    seen.add(stamp());
    assert.equal(seen.size, 5);
  });

  it('ignores what the build does not read', async function () {
    const before = stamp();
    await fs.mkdir(path.join(root, 'test'));
    await fs.writeFile(path.join(root, 'test', 'x.test.ts'), '');
    await fs.writeFile(path.join(root, 'README.md'), '');
    assert.equal(stamp(), before);
  });
});
