/**
 * `runtimeClassName` → the CRI runtime handler, as upstream's runtimeclass.Manager resolves it
 * (pkg/kubelet/runtimeclass): from the RuntimeClass object `node.k8s.io/v1` of that name
 * (its `handler`) in API-server mode, from the `runtimeClassHandlers` map of the config
 * without one. A name that resolves to nothing fails the sandbox's creation: the pod waits in
 * ContainerCreating with the error as message and a FailedCreatePodSandBox event, and is
 * retried, so a RuntimeClass created later is picked up.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ApiClient } from './api-client.ts';
import { isKubeletError } from '../errors.ts';

/** How long a handler read from the API server is used without asking again. */
const FRESH_MS = 10_000;

/** A RuntimeClass as the API serves it: the handler is what the kubelet needs. */
interface RuntimeClassObject { handler?: string }

export class RuntimeClasses {
  private readonly known = new Map<string, { handler: string; at: number }>();

  constructor(
    private readonly deps: {
      /** The API client in API-server mode (undefined: standalone, the local map is used). */
      client: () => ApiClient | undefined;
      /** kubelet-ts `runtimeClassHandlers`: runtimeClassName → handler, for a kubelet without an API server. */
      handlers: Readonly<Record<string, string>>;
    },
  ) {}

  /** The runtime handler for the pod's sandbox: '' (the runtime's default) without a runtimeClassName. */
  async handler(pod: V1Pod): Promise<string> {
    const name = pod.spec?.runtimeClassName;
    if (!name) return '';
    const client = this.deps.client();
    if (!client) {
      const handler = Object.hasOwn(this.deps.handlers, name) ? this.deps.handlers[name] : undefined;
      if (handler === undefined) {
        throw new Error(`runtimeclass.node.k8s.io "${name}" not found: without an API server, RuntimeClasses come from runtimeClassHandlers in the kubelet's config`);
      }
      return handler;
    }
    const cached = this.known.get(name);
    if (cached && Date.now() - cached.at < FRESH_MS) return cached.handler;
    let rc: RuntimeClassObject;
    try {
      rc = await client.request<RuntimeClassObject>('GET', `/apis/node.k8s.io/v1/runtimeclasses/${encodeURIComponent(name)}`);
    } catch (err) {
      if (isKubeletError(err) && err.code === 'NotFound') {
        this.known.delete(name);
        // The server's words, as upstream shows them: runtimeclasses.node.k8s.io "x" not found.
        throw err;
      }
      // The API server away: the last known handler still serves (upstream reads an informer cache).
      if (cached) return cached.handler;
      throw new Error(`failed to lookup RuntimeClass ${name}: ${(err as Error).message}`, { cause: err });
    }
    const handler = typeof rc.handler === 'string' ? rc.handler : '';
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(handler)) throw new Error(`RuntimeClass ${name} has an invalid handler "${handler}"`);
    this.known.set(name, { handler, at: Date.now() });
    return handler;
  }
}
