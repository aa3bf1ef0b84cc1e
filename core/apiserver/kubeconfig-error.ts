/**
 * A kubeconfig that cannot be used; the message names the file and what is wrong. Apart from
 * the kubeconfig loader (which loads @kubernetes/client-node, about 70 MiB of RSS), so the CLI
 * and a standalone kubelet can recognise it without loading that.
 */
export class KubeconfigError extends Error {
  constructor(file: string, problem: string, options?: { cause?: unknown }) {
    super(`kubeconfig ${file}: ${problem}`, options);
    this.name = 'KubeconfigError';
  }
}
