/**
 * Loads a kubeconfig for the kubelet's API client: the file is checked whole at start, with
 * messages that name the file and what is wrong in it (client-node's KubeConfig reports a broken
 * file late and vaguely: "No active cluster!", an ENOENT from a certificate read at the first
 * request), relative paths are resolved against the file's directory (as kubectl does), and the
 * client's identity is read from its certificate so that errors can say who was refused.
 *
 * The result is the current context's cluster and user in client-node's shapes (`Cluster`,
 * `User`: types only), not a client-node `KubeConfig`: that class imports client-node's whole
 * generated client (2,556 model files, about 66 MiB of RSS in a kubelet; bench/README.md), and a
 * node's kubeconfig (a client certificate, a token) needs none of it. credentials.ts applies
 * them, and loads client-node only for what it alone implements (exec plugins, auth providers,
 * proxies).
 */
import type { Cluster, User } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors.ts';

/** Who the API server will take the client for, as far as the kubeconfig tells. */
export interface ClientIdentity {
  /** The user name (a client certificate's CN, or what SelfSubjectReview answered), when known. */
  user: string | undefined;
  /** The groups (a client certificate's O entries, or what SelfSubjectReview answered). */
  groups: string[];
  /** How the kubeconfig authenticates. */
  method: 'client certificate' | 'token' | 'basic auth' | 'exec plugin' | 'auth provider' | 'none';
  /** The client certificate's expiry (ms since the epoch), when it has one. */
  certNotAfter?: number;
}

/** How messages name the identity: the user when known, else what the kubeconfig holds. */
export function describeIdentity(id: ClientIdentity): string {
  if (id.user) return id.user;
  switch (id.method) {
    case 'token':
      return "the kubeconfig's token";
    case 'basic auth':
      return "the kubeconfig's user name and password";
    case 'exec plugin':
      return "the kubeconfig's exec credential plugin";
    case 'auth provider':
      return "the kubeconfig's auth provider";
    case 'none':
      return 'an anonymous client (the kubeconfig has no credentials)';
    default:
      return "the kubeconfig's client certificate";
  }
}

/** A checked kubeconfig. */
export interface LoadedKubeconfig {
  /** The absolute path of the file. */
  file: string;
  /** The API server URL of the current context, without a trailing slash. */
  server: string;
  identity: ClientIdentity;
  /** The current context's cluster, paths absolute. */
  cluster: Cluster;
  /** The current context's user, paths absolute (the overrides applied); undefined: no user. */
  user: KubeconfigUser | undefined;
  /** The current context's name. */
  context: string;
  /** The whole document as checked (paths absolute): what client-node reads when it must apply the credentials. */
  document: Record<string, unknown>;
}

/** A kubeconfig user as client-node's `User`, with the token file kept apart (read again as it changes, as client-go does). */
export interface KubeconfigUser extends User {
  readonly tokenFile?: string;
}

import { KubeconfigError } from './kubeconfig-error.ts';

export { KubeconfigError };

/** What the kubelet puts in place of parts of the file. */
export interface KubeconfigOverrides {
  /**
   * A PEM file holding the client certificate and its key (the certificate store's
   * `kubelet-client-current.pem`, with rotateCertificates): the user's credentials are that
   * file's, read again at each request, so a rotated pair is used without a restart.
   */
  clientCertificateFile?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads, checks and loads a kubeconfig file. Throws KubeconfigError. */
export function loadKubeconfig(file: string, options: KubeconfigOverrides = {}): LoadedKubeconfig {
  const abs = path.resolve(file);
  const fail = (problem: string, cause?: unknown): never => {
    throw new KubeconfigError(abs, problem, { cause });
  };
  let text = '';
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (err) {
    fail(`cannot read the file: ${errorMessage(err)}`, err);
  }
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (err) {
    fail(`not valid YAML: ${errorMessage(err).split('\n')[0]}`, err);
  }
  if (!isObj(doc)) return fail('not a kubeconfig (expected a YAML mapping with clusters, users, contexts and current-context)');

  const named = (list: string) => {
    const value = doc[list];
    if (value !== undefined && value !== null && !Array.isArray(value)) fail(`${list} must be a list`);
    const entries = (value ?? []) as unknown[];
    return entries.map((e, i) => {
      if (!isObj(e) || typeof e.name !== 'string' || !e.name) return fail(`${list}[${i}] has no name`);
      return e as Obj & { name: string };
    });
  };
  const clusters = named('clusters');
  const users = named('users');
  const contexts = named('contexts');
  const list = (entries: Array<{ name: string }>) => (entries.length ? entries.map((e) => JSON.stringify(e.name)).join(', ') : 'none');

  const current = doc['current-context'];
  if (typeof current !== 'string' || !current) fail(`no current-context is set (contexts in the file: ${list(contexts)})`);
  const context = contexts.find((c) => c.name === current);
  if (!context) return fail(`current-context ${JSON.stringify(current)} is not among its contexts (${list(contexts)})`);
  const ctx = isObj(context.context) ? context.context : fail(`context ${JSON.stringify(current)} has no context: mapping`);
  const clusterName = ctx.cluster;
  if (typeof clusterName !== 'string' || !clusterName) fail(`context ${JSON.stringify(current)} names no cluster`);
  const clusterEntry = clusters.find((c) => c.name === clusterName);
  if (!clusterEntry) return fail(`context ${JSON.stringify(current)} names cluster ${JSON.stringify(clusterName)}, which the file does not define (clusters: ${list(clusters)})`);
  const cluster = isObj(clusterEntry.cluster) ? clusterEntry.cluster : fail(`cluster ${JSON.stringify(clusterName)} has no cluster: mapping`);
  const where = `cluster ${JSON.stringify(clusterName)}`;
  const server = cluster.server;
  if (typeof server !== 'string' || !server) fail(`${where} has no server`);
  let url: URL;
  try {
    url = new URL(server as string);
  } catch {
    return fail(`${where}: server ${JSON.stringify(server)} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') fail(`${where}: server ${JSON.stringify(server)} must be an https:// URL`);
  if (url.protocol === 'http:' && cluster['insecure-skip-tls-verify'] !== true) {
    fail(`${where}: server ${JSON.stringify(server)} is plain http, which client-node only allows with insecure-skip-tls-verify: true`);
  }

  // Relative paths in a kubeconfig are relative to the file (kubectl's rule).
  const dir = path.dirname(abs);
  const resolveFile = (holder: Obj, key: string, owner: string): Buffer | undefined => {
    const p = holder[key];
    if (p === undefined || p === null || p === '') return undefined;
    if (typeof p !== 'string') return fail(`${owner}: ${key} must be a path`);
    const full = path.resolve(dir, p);
    holder[key] = full;
    try {
      return fs.readFileSync(full);
    } catch (err) {
      return fail(`${owner}: ${key} ${full}: cannot read: ${errorMessage(err)}`, err);
    }
  };
  const decode = (holder: Obj, key: string, owner: string): Buffer | undefined => {
    const v = holder[key];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') return fail(`${owner}: ${key} must be a base64 string`);
    return Buffer.from(v, 'base64');
  };
  const pemCert = (buf: Buffer | undefined, what: string) => {
    if (buf && !buf.toString('utf8').includes('-----BEGIN CERTIFICATE-----')) fail(`${what} is not a PEM certificate`);
    return buf;
  };

  const ca = pemCert(decode(cluster, 'certificate-authority-data', where) ?? resolveFile(cluster, 'certificate-authority', where), `${where}: the certificate authority`);
  if (ca) {
    try {
      new X509Certificate(ca);
    } catch (err) {
      fail(`${where}: the certificate authority does not parse: ${errorMessage(err)}`, err);
    }
  }

  let identity: ClientIdentity = { user: undefined, groups: [], method: 'none' };
  let userOut: KubeconfigUser | undefined;
  const userName = ctx.user;
  if (userName !== undefined && userName !== null && userName !== '') {
    if (typeof userName !== 'string') fail(`context ${JSON.stringify(current)}: user must be a name`);
    const userEntry = users.find((u) => u.name === userName);
    if (!userEntry) return fail(`context ${JSON.stringify(current)} names user ${JSON.stringify(userName)}, which the file does not define (users: ${list(users)})`);
    let user = isObj(userEntry.user) ? userEntry.user : {};
    if (options.clientCertificateFile) user = { 'client-certificate': options.clientCertificateFile, 'client-key': options.clientCertificateFile };
    userEntry.user = user;
    const who = `user ${JSON.stringify(userName)}`;
    const cert = pemCert(decode(user, 'client-certificate-data', who) ?? resolveFile(user, 'client-certificate', who), `${who}: the client certificate`);
    const key = decode(user, 'client-key-data', who) ?? resolveFile(user, 'client-key', who);
    if (cert && !key) fail(`${who} has a client certificate but no client-key or client-key-data`);
    if (key && !cert) fail(`${who} has a client key but no client-certificate or client-certificate-data`);
    // YAML reads an unquoted all-digit token as a number, which client-node would drop without a
    // word (no credentials, then 401s); upstream's loader refuses a token that is not a string.
    for (const field of ['token', 'token-file', 'username', 'password'] as const) {
      const v = user[field];
      if (v !== undefined && v !== null && typeof v !== 'string') fail(`${who}: ${field} must be a string (quote it in YAML), not ${typeof v === 'object' ? 'an object' : `a ${typeof v}`}`);
    }
    if (typeof user['token-file'] === 'string' && user['token-file']) {
      const tokenFile = path.resolve(dir, user['token-file']);
      user['token-file'] = tokenFile;
      try {
        fs.accessSync(tokenFile, fs.constants.R_OK);
      } catch (err) {
        fail(`${who}: token-file ${tokenFile}: cannot read: ${errorMessage(err)}`, err);
      }
    }
    // An exec plugin's command with a path separator is a path, relative to the file (client-go's rule); a bare name is looked up in PATH.
    if (isObj(user.exec)) {
      const command = user.exec.command;
      if (typeof command !== 'string' || !command) fail(`${who}: exec has no command`);
      else if (command.includes('/') && !path.isAbsolute(command)) user.exec = { ...user.exec, command: path.resolve(dir, command) };
    }
    if (cert && key) identity = certificateIdentity(cert, key, who, fail);
    else if (user.token || user['token-file']) identity = { user: undefined, groups: [], method: 'token' };
    else if (user.exec) identity = { user: undefined, groups: [], method: 'exec plugin' };
    else if (user['auth-provider']) identity = { user: undefined, groups: [], method: 'auth provider' };
    else if (user.username) identity = { user: undefined, groups: [], method: 'basic auth' };
    userOut = userOf(userName as string, user);
  }

  for (const field of ['tls-server-name', 'proxy-url'] as const) {
    const v = cluster[field];
    if (v !== undefined && v !== null && typeof v !== 'string') fail(`${where}: ${field} must be a string`);
  }
  const clusterOut: Cluster = {
    name: clusterName as string,
    server: (server as string).replace(/\/+$/, ''),
    skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    ...(typeof cluster['certificate-authority-data'] === 'string' && cluster['certificate-authority-data'] ? { caData: cluster['certificate-authority-data'] } : {}),
    ...(typeof cluster['certificate-authority'] === 'string' && cluster['certificate-authority'] ? { caFile: cluster['certificate-authority'] } : {}),
    ...(typeof cluster['tls-server-name'] === 'string' && cluster['tls-server-name'] ? { tlsServerName: cluster['tls-server-name'] } : {}),
    ...(typeof cluster['proxy-url'] === 'string' && cluster['proxy-url'] ? { proxyUrl: cluster['proxy-url'] } : {}),
  };
  return { file: abs, server: clusterOut.server, identity, cluster: clusterOut, user: userOut, context: current as string, document: doc };
}

/** The user entry in client-node's shape: strings only (the checks above refused other types). */
function userOf(name: string, user: Obj): KubeconfigUser {
  const str = (key: string): string | undefined => (typeof user[key] === 'string' && user[key] ? (user[key] as string) : undefined);
  const out: Record<string, unknown> = { name };
  const fields: Array<[keyof KubeconfigUser, string]> = [
    ['certData', 'client-certificate-data'], ['certFile', 'client-certificate'], ['keyData', 'client-key-data'], ['keyFile', 'client-key'],
    ['token', 'token'], ['tokenFile', 'token-file'], ['username', 'username'], ['password', 'password'],
  ];
  for (const [to, from] of fields) {
    const v = str(from);
    if (v !== undefined) out[to] = v;
  }
  if (isObj(user.exec)) out.exec = user.exec;
  if (isObj(user['auth-provider'])) out.authProvider = user['auth-provider'];
  return out as unknown as KubeconfigUser;
}

/** The identity a client certificate carries: CN is the user, each O a group (the API server's x509 authenticator). */
function certificateIdentity(cert: Buffer, key: Buffer, who: string, fail: (problem: string, cause?: unknown) => never): ClientIdentity {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    return fail(`${who}: the client certificate does not parse: ${errorMessage(err)}`, err);
  }
  try {
    if (!x509.checkPrivateKey(createPrivateKey(key))) fail(`${who}: the client key does not belong to the client certificate (subject ${x509.subject.replace(/\n/g, ', ')})`);
  } catch (err) {
    if (err instanceof KubeconfigError) throw err;
    fail(`${who}: the client key does not parse: ${errorMessage(err)}`, err);
  }
  const fields = x509.subject.split('\n').map((line) => {
    const eq = line.indexOf('=');
    return [line.slice(0, eq), line.slice(eq + 1)] as const;
  });
  const user = fields.find(([k]) => k === 'CN')?.[1];
  const groups = fields.filter(([k]) => k === 'O').map(([, v]) => v);
  return { user, groups, method: 'client certificate', certNotAfter: Date.parse(x509.validTo) };
}
