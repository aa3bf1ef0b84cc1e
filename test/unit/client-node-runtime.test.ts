import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The kubelet does not load @kubernetes/client-node's runtime: its package index (and its
 * KubeConfig, which imports the index) loads the whole generated client, about 66 MiB of RSS in a
 * node (bench/README.md). Its types are free (`import type`); single model files are allowed
 * (the manifest decoder reads their attribute maps); the package itself only where a kubeconfig
 * needs what client-node alone implements (exec plugins, auth providers), imported at first use.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const LAZY_ALLOWED = new Set(['core/apiserver/credentials.ts']);

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sources(rel)));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

describe('client-node at run time (memory: issue 25 item 3)', function () {
  it('core/ and plugins/ import its types only, single model files, and the package lazily where only it can apply a kubeconfig', async function () {
    const offenders: string[] = [];
    for (const file of [...(await sources('core')), ...(await sources('plugins'))]) {
      const text = await fs.readFile(path.join(ROOT, file), 'utf8');
      for (const m of text.matchAll(/^import\s+([^;]*?)\s+from\s+'(@kubernetes\/client-node(?:\/[^']*)?)'/gm)) {
        const [, what, spec] = m;
        if (what!.startsWith('type ')) continue;
        if (/^@kubernetes\/client-node\/dist\/gen\/models\/\w+\.js$/.test(spec!)) continue;
        offenders.push(`${file}: import ${what!.replace(/\s+/g, ' ')} from '${spec}'`);
      }
      for (const m of text.matchAll(/await import\(\s*'(@kubernetes\/client-node[^']*)'\s*\)/g)) {
        if (!LAZY_ALLOWED.has(file)) offenders.push(`${file}: await import('${m[1]}')`);
      }
    }
    assert.deepEqual(offenders, [], 'value imports of @kubernetes/client-node load its whole generated client');
  });
});
