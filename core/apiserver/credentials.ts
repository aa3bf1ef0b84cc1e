/**
 * A kubeconfig's credentials on each request: the Authorization header and the TLS material of
 * new connections (the cluster's CA, the client certificate and key).
 *
 * What a node's kubeconfig holds (kubeadm's kubelet.conf and bootstrap-kubelet.conf, a TLS
 * bootstrap's result: a client certificate or a token, in files or inline) is applied here,
 * with files read again as they change, as client-go does: a rotated certificate pair, a
 * renewed token file or CA bundle is used without a restart. What only client-node implements
 * (exec credential plugins, auth providers, a cluster's proxy-url) is applied by client-node's
 * KubeConfig, imported at the first request of such a kubeconfig only: it loads client-node's
 * whole generated client (about 66 MiB of RSS), which no other kubeconfig pays for.
 */
import type http from 'node:http';
import type https from 'node:https';
import fs from 'node:fs/promises';
import { errorMessage } from '../errors.ts';
import type { LoadedKubeconfig } from './kubeconfig.ts';

/** TLS options of the connections to the API server. */
export interface TlsMaterial {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized: boolean;
  servername?: string;
  /** An agent to send through instead (a proxy's, from client-node for a cluster's proxy-url). */
  agent?: http.Agent;
}

/** What authenticates the next request. */
export interface AppliedCredentials {
  /** Authorization (a bearer token or basic auth), when the kubeconfig has one. */
  headers: Record<string, string>;
  tls: TlsMaterial;
}

export interface RequestCredentials {
  /** The credentials for the next request, from files as they are now (re-read within the cache periods below). */
  apply(): Promise<AppliedCredentials>;
  /** The files changed (a rotated certificate pair): the next apply() reads them again. */
  reread(): void;
}

/** How long a read of a certificate, key or CA file is reused: requests in a burst share one read. */
const FILE_CACHE_MS = 1000;
/** How long a token file's content is reused (client-go re-reads a BearerTokenFile every minute). */
const TOKEN_FILE_CACHE_MS = 60_000;

/** The credentials of a loaded kubeconfig. `tokenFileCacheMs`: tests shorten the token file's period. */
export function credentialsOf(loaded: LoadedKubeconfig, options: { tokenFileCacheMs?: number } = {}): RequestCredentials {
  const user = loaded.user;
  if (user?.exec || user?.authProvider || loaded.cluster.proxyUrl) return new ClientNodeCredentials(loaded);
  return new FileCredentials(loaded, options.tokenFileCacheMs ?? TOKEN_FILE_CACHE_MS);
}

/** A file read at most once per period; a failed read keeps the last good content, if any. */
class CachedFile {
  private value: Buffer | undefined;
  private readAt = -Infinity;
  private pending: Promise<Buffer> | undefined;

  constructor(
    private readonly file: string,
    private readonly periodMs: number,
    private readonly what: string,
  ) {}

  forget(): void {
    this.readAt = -Infinity;
  }

  async read(): Promise<Buffer> {
    if (this.value && performance.now() - this.readAt < this.periodMs) return this.value;
    this.pending ??= fs.readFile(this.file).then(
      (data) => {
        this.value = data;
        this.readAt = performance.now();
        return data;
      },
      (err: unknown) => {
        if (this.value) return this.value;
        throw new Error(`${this.what} ${this.file}: cannot read: ${errorMessage(err)}`, { cause: err });
      },
    ).finally(() => (this.pending = undefined));
    return this.pending;
  }
}

/** Certificates, keys and tokens inline or in files: everything without a plugin. */
class FileCredentials implements RequestCredentials {
  private readonly files: CachedFile[] = [];
  private readonly ca: (() => Promise<Buffer | undefined>) | undefined;
  private readonly cert: (() => Promise<Buffer | undefined>) | undefined;
  private readonly key: (() => Promise<Buffer | undefined>) | undefined;
  private readonly token: (() => Promise<string | undefined>) | undefined;
  private readonly basic: string | undefined;
  private readonly rejectUnauthorized: boolean;
  private readonly servername: string | undefined;

  constructor(loaded: LoadedKubeconfig, tokenFileCacheMs: number) {
    const { cluster, user } = loaded;
    this.ca = this.source(cluster.caData, cluster.caFile, 'certificate-authority');
    this.cert = this.source(user?.certData, user?.certFile, 'client-certificate');
    this.key = this.source(user?.keyData, user?.keyFile, 'client-key');
    // client-go: the token file's last good read wins over an inline token.
    if (user?.tokenFile) {
      const file = new CachedFile(user.tokenFile, tokenFileCacheMs, 'token-file');
      this.files.push(file);
      this.token = async () => (await file.read()).toString('utf8').trim() || user.token;
    } else if (user?.token) {
      const token = user.token;
      this.token = async () => token;
    }
    this.basic = user?.username ? `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}` : undefined;
    this.rejectUnauthorized = !cluster.skipTLSVerify;
    this.servername = cluster.tlsServerName;
  }

  reread(): void {
    for (const f of this.files) f.forget();
  }

  /** Inline base64 data (decoded once) or a file (read again as it changes). */
  private source(data: string | undefined, file: string | undefined, what: string): (() => Promise<Buffer | undefined>) | undefined {
    if (data) {
      const decoded = Buffer.from(data, 'base64');
      return async () => decoded;
    }
    if (!file) return undefined;
    const cached = new CachedFile(file, FILE_CACHE_MS, what);
    this.files.push(cached);
    return () => cached.read();
  }

  async apply(): Promise<AppliedCredentials> {
    const [ca, cert, key, token] = await Promise.all([this.ca?.(), this.cert?.(), this.key?.(), this.token?.()]);
    const headers: Record<string, string> = {};
    if (token) headers.Authorization = `Bearer ${token}`;
    else if (this.basic) headers.Authorization = this.basic;
    const tls: TlsMaterial = { rejectUnauthorized: this.rejectUnauthorized };
    if (ca) tls.ca = ca;
    if (cert && key) {
      tls.cert = cert;
      tls.key = key;
    }
    if (this.servername) tls.servername = this.servername;
    return { headers, tls };
  }
}

/** Exec plugins, auth providers and proxies: client-node's KubeConfig applies them, loaded at first use. */
class ClientNodeCredentials implements RequestCredentials {
  private kubeConfig: Promise<import('@kubernetes/client-node').KubeConfig> | undefined;

  constructor(private readonly loaded: LoadedKubeconfig) {}

  reread(): void {
    // client-node reads files at every apply.
  }

  async apply(): Promise<AppliedCredentials> {
    const kc = await (this.kubeConfig ??= this.load());
    const opts: https.RequestOptions = { headers: {} };
    await kc.applyToHTTPSOptions(opts);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === 'string') headers[k] = v;
    // client-node puts basic auth in `auth`, not in a header.
    if (opts.auth && !headers.Authorization) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    const buf = (v: unknown) => (v === undefined || v === null ? undefined : Buffer.isBuffer(v) ? v : Buffer.from(String(v)));
    const tls: TlsMaterial = { rejectUnauthorized: opts.rejectUnauthorized !== false };
    const ca = buf(opts.ca);
    const cert = buf(opts.cert);
    const key = buf(opts.key);
    if (ca) tls.ca = ca;
    if (cert) tls.cert = cert;
    if (key) tls.key = key;
    if (opts.servername) tls.servername = opts.servername;
    // A proxy's agent is the way out; a plain https.Agent is only the TLS options above.
    const agent = opts.agent;
    if (agent && typeof agent === 'object' && agent.constructor.name !== 'Agent') tls.agent = agent;
    return { headers, tls };
  }

  private async load() {
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    // JSON is YAML: client-node reads the checked document with its paths made absolute.
    kc.loadFromString(JSON.stringify(this.loaded.document));
    kc.setCurrentContext(this.loaded.context);
    return kc;
  }
}
