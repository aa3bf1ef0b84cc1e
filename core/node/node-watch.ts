/**
 * A watch of this node's own Node (list, then watch with a `metadata.name` field selector, on
 * the reflector), so the node status loop and admission read the Node without a GET every
 * nodeStatusUpdateFrequency. Upstream's kubelet keeps the same watch (its node informer) and
 * still GETs the Node every 10 s for the status; kubelet-ts computes the status against the
 * watched copy instead, which halves the requests a node makes at steady state.
 *
 * The copy is only trusted while the watch is current (`current()`): listed at least once, no
 * failure since the last list or watch delivery, and the watch not silent. A watch that heard
 * nothing (no event, no bookmark, which the API server sends about every minute) for the
 * reflector's silence period is dead: the copy is not trusted from then, and the Node is listed
 * again at once (a list of one Node costs what a GET does), which trusts it again. Otherwise the
 * status loop GETs the Node, as before. A write's answer (the PATCH of nodes/status) is newer
 * than the watched copy until its watch event arrives: `observe()` keeps the newer of the two.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ApiClient } from '../apiserver/api-client.ts';
import { isUnavailableError } from '../apiserver/api-errors.ts';
import { longWatchTimeoutSeconds, Reflector, type ReflectorOptions } from '../apiserver/reflector.ts';

export interface NodeWatchOptions {
  client: ApiClient;
  nodeName: string;
  logger: Logger;
  /** The watch saw the Node deleted (the status loop registers it again). */
  onDeleted?: () => void;
  /** Reflector settings for tests (back-off, watch timeout, silence period). */
  reflector?: Pick<ReflectorOptions, 'backoff' | 'watchTimeoutSeconds' | 'bookmarkIntervalMs' | 'silenceMs'>;
}

export class NodeWatch {
  private readonly reflector: Reflector;
  private readonly log: Logger;
  private nodeValue: V1Node | undefined;
  /** A list answered, and no failure and no silence came after the last list or watch delivery. */
  private current_ = false;
  private lastError = '';

  constructor(private readonly opts: NodeWatchOptions) {
    this.log = opts.logger.child({ component: 'node-watch', node: opts.nodeName });
    this.reflector = new Reflector({
      client: opts.client,
      path: '/api/v1/nodes',
      query: { fieldSelector: `metadata.name=${opts.nodeName}` },
      logger: this.log,
      // 30–60 min: a silent watch is caught by the silence check, not by its timeout.
      watchTimeoutSeconds: longWatchTimeoutSeconds,
      // This kubelet writes its Node (registration, status): the server's watch cache has seen
      // a change of it and bookmarks the watch, so silence means a dead watch from the first one.
      bookmarksExpected: true,
      ...opts.reflector,
      handler: {
        replace: (items) => {
          const node = items.find((i): i is V1Node => isNamed(i, opts.nodeName));
          const held = this.nodeValue;
          // A list from the watch cache may be older than a write's answer already held.
          this.nodeValue = node ? newer(held, node) : undefined;
          this.heard();
          // Deleted while the watch was away.
          if (held && !node) this.opts.onDeleted?.();
        },
        event: (type, object) => {
          if (!isNamed(object, opts.nodeName)) return;
          if (type === 'DELETED') {
            // The end of a Node the kubelet already replaced (registered again) is old news.
            if (this.nodeValue && this.nodeValue.metadata?.uid !== object.metadata?.uid) return;
            this.nodeValue = undefined;
            this.opts.onDeleted?.();
          } else this.nodeValue = newer(this.nodeValue, object);
        },
        progress: () => this.heard(),
        silent: () => {
          // Not trusted until the list answers (it comes at once, not at the next bookmark).
          this.current_ = false;
          return 'relist';
        },
        failed: (what, err, retryInMs) => {
          this.current_ = false;
          const message = errorMessage(err);
          const fields = { what, err: message, retryInMs };
          // The status loop GETs the Node meanwhile; an unreachable server is the connectivity tracker's line.
          if (isUnavailableError(err) || message === this.lastError) this.log.debug(fields, 'the watch of the Node failed; reading the Node with GET until it is back');
          else this.log.warn(fields, 'the watch of the Node failed; reading the Node with GET until it is back');
          this.lastError = message;
        },
      },
    });
  }

  start(): void {
    this.reflector.start();
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }

  /** Re-list from etcd (the Node was registered again: the server's data may have gone back in time). */
  relist(reason: string): void {
    this.current_ = false;
    this.reflector.relist(reason);
  }

  /**
   * The watched Node when the watch is current: `{ node }` (undefined: the watch says there is
   * no such Node); undefined when the copy may be behind the server (GET it instead).
   */
  current(): { node: V1Node | undefined } | undefined {
    return this.current_ ? { node: this.nodeValue } : undefined;
  }

  /** The latest copy known, current or not (what admission checks labels and taints against). */
  get node(): V1Node | undefined {
    return this.nodeValue;
  }

  /** A Node the kubelet got from the server otherwise (a write's answer, a GET): kept when newer than the watched copy. */
  observe(node: V1Node): void {
    if (isNamed(node, this.opts.nodeName)) this.nodeValue = newer(this.nodeValue, node);
  }

  private heard(): void {
    if (!this.current_ && this.lastError) this.log.info('the watch of the Node is back');
    this.current_ = true;
    this.lastError = '';
  }
}

function isNamed(object: unknown, name: string): object is V1Node {
  return typeof object === 'object' && object !== null && (object as V1Node).metadata?.name === name;
}

/**
 * The newer of two copies of the Node. resourceVersions are opaque to clients, but an API
 * server on etcd hands out integers that grow with each write; when either is not one, or the
 * UIDs differ (deleted and created again), the copy received last wins.
 */
function newer(held: V1Node | undefined, received: V1Node): V1Node {
  if (!held || held.metadata?.uid !== received.metadata?.uid) return received;
  const a = held.metadata?.resourceVersion ?? '';
  const b = received.metadata?.resourceVersion ?? '';
  if (/^\d{1,30}$/.test(a) && /^\d{1,30}$/.test(b) && BigInt(a) > BigInt(b)) return held;
  return received;
}
