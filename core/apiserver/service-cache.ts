/**
 * The cluster's Services, as much of each as service links need (core/objects/service-links.ts),
 * list-watched from the API server as upstream's kubelet does with its service informer (the
 * Node authorizer lets a node list and watch services). Only namespace, name, cluster IP and
 * ports are kept: a node of a cluster with thousands of services holds no more than that.
 * The watch lasts 30–60 minutes; a dead one is restarted by the reflector's silence check.
 */
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ApiClient } from './api-client.ts';
import { longWatchTimeoutSeconds, Reflector } from './reflector.ts';
import type { ServiceLink, ServiceLinkSource } from '../objects/service-links.ts';

interface ServiceObject {
  metadata?: { namespace?: unknown; name?: unknown };
  spec?: { clusterIP?: unknown; ports?: unknown };
}

/** The link-relevant part of a Service from the API; undefined for what is not one. */
export function toServiceLink(o: unknown): ServiceLink | undefined {
  const s = o as ServiceObject | undefined;
  const namespace = s?.metadata?.namespace;
  const name = s?.metadata?.name;
  if (typeof namespace !== 'string' || typeof name !== 'string') return undefined;
  const clusterIP = typeof s?.spec?.clusterIP === 'string' ? s.spec.clusterIP : '';
  const ports: ServiceLink['ports'] = [];
  for (const p of Array.isArray(s?.spec?.ports) ? s.spec.ports : []) {
    const port = (p as { port?: unknown }).port;
    if (typeof port !== 'number' || !Number.isInteger(port)) continue;
    const pn = (p as { name?: unknown }).name;
    const protocol = (p as { protocol?: unknown }).protocol;
    ports.push({ port, ...(typeof pn === 'string' && pn ? { name: pn } : {}), ...(typeof protocol === 'string' && protocol ? { protocol } : {}) });
  }
  return { namespace, name, clusterIP, ports };
}

export class ServiceCache implements ServiceLinkSource {
  private readonly services = new Map<string, ServiceLink>();
  private readonly reflector: Reflector;

  constructor(opts: { client: ApiClient; logger: Logger; /** The reflector's silence check (tests); default 150 s. */ silenceMs?: number }) {
    const key = (s: ServiceLink) => `${s.namespace}/${s.name}`;
    this.reflector = new Reflector({
      client: opts.client,
      path: '/api/v1/services',
      query: {},
      logger: opts.logger,
      // 30–60 min: a dead watch is caught by the reflector's silence check, not by its timeout.
      watchTimeoutSeconds: longWatchTimeoutSeconds,
      ...(opts.silenceMs !== undefined ? { silenceMs: opts.silenceMs } : {}),
      handler: {
        replace: (items) => {
          this.services.clear();
          for (const item of items) {
            const s = toServiceLink(item);
            if (s) this.services.set(key(s), s);
          }
        },
        event: (type, object) => {
          const s = toServiceLink(object);
          if (!s) return;
          if (type === 'DELETED') this.services.delete(key(s));
          else this.services.set(key(s), s);
        },
        failed: (what, err, retryInMs) => opts.logger.warn({ err: errorMessage(err), retryInMs }, `services ${what} failed`),
      },
    });
  }

  get synced(): boolean {
    return this.reflector.synced;
  }

  list(): Iterable<ServiceLink> {
    return this.services.values();
  }

  start(): void {
    this.reflector.start();
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }
}
