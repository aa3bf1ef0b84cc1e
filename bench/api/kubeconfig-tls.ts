import yaml from 'js-yaml';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The server and TLS material of a kubeconfig's current context, for the benchmark's own
 * clients (the admin client, the counting proxy's upstream side), and a kubeconfig that points
 * a kubelet at another server (the proxy) with another CA but the same client identity.
 */
export interface KubeTls {
  server: string;
  ca: Buffer | undefined;
  cert: Buffer | undefined;
  key: Buffer | undefined;
}

type Obj = Record<string, unknown>;

function named(doc: Obj, list: string, name: unknown, file: string): Obj {
  const entry = ((doc[list] as Obj[] | undefined) ?? []).find((e) => e.name === name);
  if (!entry) throw new Error(`${file}: no ${list} entry named ${JSON.stringify(name)}`);
  return entry;
}

/** Reads the current context's server, CA and client certificate (inline `-data` or file paths). */
export function readKubeconfigTls(file: string): KubeTls {
  const doc = yaml.load(readFileSync(file, 'utf8')) as Obj;
  const context = named(doc, 'contexts', doc['current-context'], file).context as Obj;
  const cluster = named(doc, 'clusters', context.cluster, file).cluster as Obj;
  const user = (context.user ? named(doc, 'users', context.user, file).user : {}) as Obj;
  const material = (holder: Obj, key: string): Buffer | undefined => {
    const data = holder[`${key}-data`];
    if (typeof data === 'string' && data) return Buffer.from(data, 'base64');
    const p = holder[key];
    if (typeof p === 'string' && p) return readFileSync(path.resolve(path.dirname(file), p));
    return undefined;
  };
  return {
    server: String(cluster.server).replace(/\/+$/, ''),
    ca: material(cluster, 'certificate-authority'),
    cert: material(user, 'client-certificate'),
    key: material(user, 'client-key'),
  };
}

/**
 * Writes `out`: the kubeconfig `file` with its server replaced by `server` and its CA by the
 * file `caFile` (the proxy's own CA); users and the client certificate stay as they are, so
 * the kubelet still knows (and checks) its node identity.
 */
export async function writeRedirectedKubeconfig(file: string, out: string, server: string, caFile: string): Promise<void> {
  const doc = yaml.load(readFileSync(file, 'utf8')) as Obj;
  const context = named(doc, 'contexts', doc['current-context'], file).context as Obj;
  const cluster = named(doc, 'clusters', context.cluster, file).cluster as Obj;
  delete cluster['certificate-authority-data'];
  cluster['certificate-authority'] = caFile;
  cluster.server = server;
  await writeFile(out, yaml.dump(doc), { mode: 0o600 });
}
