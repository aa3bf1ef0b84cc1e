/**
 * A watch of this node's own Node (list, then watch with a `metadata.name` field selector, on
 * the reflector), so the node status loop and admission read the Node without a GET every
 * nodeStatusUpdateFrequency. Upstream's kubelet keeps the same watch (its node informer) and
 * still GETs the Node every 10 s for the status; kubelet-ts computes the status against the
 * watched copy instead, which halves the requests a node makes at steady state.
 *
 * The copy is only trusted while the watch is current (`current()`): listed at least once,
 * no failure since the last list or watch delivery, and something (an event or a bookmark,
 * which the API server sends about every minute) heard within STALE_AFTER_MS. Otherwise the
 * status loop GETs the Node, as before. A write's answer (the PATCH of nodes/status) is newer
 * than the watched copy until its watch event arrives: `observe()` keeps the newer of the two.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ApiClient } from '../apiserver/api-client.ts';
import { isUnavailableError } from '../apiserver/api-errors.ts';
import { longWatchTimeoutSeconds, Reflector, type ReflectorOptions } from '../apiserver/reflector.ts';

/**
 * How long the watch may be silent (no event, no bookmark) before its copy is not trusted: the
 * API server sends a bookmark about every minute, so three missed ones mean a connection that
 * died without a word. The same period as the reflector's silence check (WATCH_SILENCE_MS),
 * which this watch turns off: current() is the check here, and it re-lists.
 */
const STALE_AFTER_MS = 150_000;

export interface NodeWatchOptions {
  client: ApiClient;
  nodeName: string;
  logger: Logger;
  /** The watch saw the Node deleted (the status loop registers it again). */
  onDeleted?: () => void;
  now?: () => number;
  staleAfterMs?: number;
  /** Reflector settings for tests (back-off, watch timeout). */
  reflector?: Pick<ReflectorOptions, 'backoff' | 'watchTimeoutSeconds' | 'bookmarkIntervalMs'>;
}

export class NodeWatch {
  private readonly reflector: Reflector;
  private readonly now: () => number;
  private readonly log: Logger;
  private nodeValue: V1Node | undefined;
  /** A list answered and no failure came after the last list or watch delivery. */
  private current_ = false;
  private lastHeardMs = 0;
  private lastError = '';

  constructor(private readonly opts: NodeWatchOptions) {
    this.now = opts.now ?? Date.now;
    this.log = opts.logger.child({ component: 'node-watch', node: opts.nodeName });
    this.reflector = new Reflector({
      client: opts.client,
      path: '/api/v1/nodes',
      query: { fieldSelector: `metadata.name=${opts.nodeName}` },
      logger: this.log,
      // 30–60 min: a silent watch is caught by STALE_AFTER_MS, not by its timeout.
      watchTimeoutSeconds: longWatchTimeoutSeconds,
      // Off: current() checks the watch each time the status loop reads the Node (every
      // nodeStatusUpdateFrequency) and re-lists a silent one, which trusts the Node again at
      // once (a list of one Node costs what a GET does); the reflector's own check would only
      // restart the same watch a second time.
      silenceMs: 0,
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
    if (!this.current_) return undefined;
    if (this.now() - this.lastHeardMs > (this.opts.staleAfterMs ?? STALE_AFTER_MS)) {
      // No event and no bookmark for that long: a connection that died without a word.
      this.log.info({ silentMs: this.now() - this.lastHeardMs }, 'the watch of the Node went silent; reading the Node with GET and watching again');
      this.relist('the watch went silent');
      return undefined;
    }
    return { node: this.nodeValue };
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
    this.lastHeardMs = this.now();
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
