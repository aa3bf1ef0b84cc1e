/**
 * One line saying why asking for a certificate failed, with what to do about it where the cause
 * is known: a bootstrap token the API server refuses, an identity without the RBAC that kubeadm
 * sets up, a request that was denied. The API error's own message already names the server, the
 * identity and the verb.
 *
 * A bootstrap token the API server does not know (invalid, expired, deleted) is a 401; a
 * bootstrap kubeconfig with no credentials it reads is taken for system:anonymous (403) where
 * anonymous requests are allowed (kubeadm's default).
 */
import { isApiError } from '../apiserver/api-errors.ts';
import { errorMessage } from '../errors.ts';

export function describeRequestFailure(err: unknown, credentials: { file: string; bootstrap: boolean }): string {
  const message = errorMessage(err);
  if (!isApiError(err)) return message;
  if (err.statusCode === 401) {
    return credentials.bootstrap
      ? `${message} (is the bootstrap token in ${credentials.file} invalid, expired or deleted? kubeadm token create makes a new one)`
      : `${message} (the credentials of ${credentials.file} no longer work; with a bootstrap kubeconfig, an expired client certificate is renewed through it)`;
  }
  if (err.statusCode === 403 && credentials.bootstrap && /"system:anonymous"/.test(message)) {
    return `${message} (the API server took the request as anonymous: ${credentials.file} presents no credentials it reads; it needs a bootstrap token, kubeadm token create makes one)`;
  }
  if (err.statusCode === 403 && err.request.resource === 'certificatesigningrequests') {
    return credentials.bootstrap
      ? `${message} (the bootstrap token's group needs the system:node-bootstrapper ClusterRole, as kubeadm's kubeadm:kubelet-bootstrap binding gives it)`
      : `${message} (a node needs to create certificatesigningrequests: the Node authorizer or the system:node ClusterRole gives it)`;
  }
  return message;
}
