import type { H2ApiClient } from './h2-client.ts';
import { ObjectWatch } from './object-watch.ts';

/**
 * One API round trip, measured the way the pod benchmarks observe a pod: a small object
 * (a ConfigMap) created in the namespace, timed from the start of the create call until a
 * watch of the namespace's ConfigMaps delivers it (one write through the API server to etcd,
 * and the watch fan-out back to a client). The create call's own latency is recorded too.
 *
 * The benchmarks add this to each raw CRI sample: the kubelet's path has at least this much
 * API work in it that the raw CRI sequence has not (the pod's create reaching the kubelet's
 * watch; in fact it has two such legs, the second being its status write reaching the
 * observer's watch, so raw + one round trip is a tight bar).
 */
export interface RoundTripSample {
  /** POST until its response. */
  createMs: number;
  /** POST until the ADDED event arrived on the watch. */
  createToWatchMs: number;
}

export class RoundTrip {
  private counter = 0;

  private constructor(private readonly client: H2ApiClient, private readonly namespace: string, private readonly watch: ObjectWatch) {}

  static async start(client: H2ApiClient, namespace: string): Promise<RoundTrip> {
    return new RoundTrip(client, namespace, await ObjectWatch.start(client, `/api/v1/namespaces/${namespace}/configmaps`));
  }

  async measure(): Promise<RoundTripSample> {
    const name = `bench-api-rt-${++this.counter}`;
    const t0 = performance.now();
    const seen = this.watch.until(name, (o) => o !== undefined, 30_000, `configmap ${name} on the watch`);
    const created = await this.client.request('POST', `/api/v1/namespaces/${this.namespace}/configmaps`, {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v' },
    });
    const at = await seen;
    await this.client.request('DELETE', `/api/v1/namespaces/${this.namespace}/configmaps/${name}`, undefined, { allow: [404] });
    return { createMs: created.ms, createToWatchMs: at - t0 };
  }

  stop(): void {
    this.watch.stop();
  }
}
