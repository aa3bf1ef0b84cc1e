/**
 * What an API request does, read from its method and URL the way the API server's RequestInfo
 * resolver reads it (verb, group, resource, subresource, namespace, name), so every error can
 * say who tried what: `system:node:n1 may not patch nodes/status "n2"`.
 */
export interface RequestInfo {
  method: string;
  /** The path with its query, as sent. */
  path: string;
  /** Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection (or the HTTP method, lower case, for non-resource URLs). */
  verb: string;
  /** API group ('' for the core group). */
  group: string;
  /** The resource ('nodes', 'leases') or the path for a non-resource URL. */
  resource: string;
  subresource: string | undefined;
  namespace: string | undefined;
  name: string | undefined;
}

/** Reads the request info from an HTTP method and a URL or path. */
export function requestInfo(method: string, url: string): RequestInfo {
  const u = new URL(url, 'https://placeholder');
  const path = `${u.pathname}${u.search}`;
  const m = method.toUpperCase();
  const segments = u.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  let rest: string[];
  let group = '';
  if (segments[0] === 'api' && segments.length >= 2) rest = segments.slice(2);
  else if (segments[0] === 'apis' && segments.length >= 3) {
    group = segments[1]!;
    rest = segments.slice(3);
  } else {
    return { method: m, path, verb: m.toLowerCase(), group: '', resource: u.pathname, subresource: undefined, namespace: undefined, name: undefined };
  }
  let namespace: string | undefined;
  // /namespaces/NS/RESOURCE/...: a namespaced resource; /namespaces or /namespaces/NS: the namespace object itself.
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const resource = rest[0] ?? '';
  const name = rest[1];
  const subresource = rest.length > 2 ? rest.slice(2).join('/') : undefined;
  let verb: string;
  switch (m) {
    case 'GET':
    case 'HEAD':
      verb = name !== undefined ? 'get' : u.searchParams.get('watch') === 'true' || u.searchParams.get('watch') === '1' ? 'watch' : 'list';
      break;
    case 'POST':
      verb = 'create';
      break;
    case 'PUT':
      verb = 'update';
      break;
    case 'PATCH':
      verb = 'patch';
      break;
    case 'DELETE':
      verb = name !== undefined ? 'delete' : 'deletecollection';
      break;
    default:
      verb = m.toLowerCase();
  }
  return { method: m, path, verb, group, resource, subresource, namespace, name };
}

/**
 * The request's target as kubectl names things: `nodes/status "n2"`,
 * `leases.coordination.k8s.io "n1" in namespace "kube-node-lease"`, `pods` (a list).
 */
export function describeTarget(info: RequestInfo): string {
  const resource = `${info.resource}${info.group ? `.${info.group}` : ''}${info.subresource ? `/${info.subresource}` : ''}`;
  const name = info.name !== undefined ? ` ${JSON.stringify(info.name)}` : '';
  const ns = info.namespace !== undefined ? ` in namespace ${JSON.stringify(info.namespace)}` : '';
  return `${resource}${name}${ns}`;
}
