/**
 * The static pod URL source (upstream --manifest-url / staticPodURL, config/http.go): a URL
 * answering one Pod or a PodList, fetched every `httpCheckFrequency` with the configured
 * headers. Its pods are static pods (source `http`, UIDs hashed with `url:<url>` as upstream,
 * mirror pods like the file source's).
 *
 * An unreachable URL, an error status, a timeout, an answer too large or that does not parse
 * or validate keeps the last good set, and is logged as one clear line — once per distinct
 * problem, and once when the URL is good again. Until a first fetch succeeds the source has
 * not reported (the kubelet then does not remove pods it may be running for it).
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { loadObjectModels } from '../objects/object-decoder.ts';
import type { PodSource } from './pod-source.ts';
import { CONFIG_SEEN_ANNOTATION } from '../objects/pod-origin.ts';
import { MAX_MANIFEST_BYTES, applyStaticPodDefaults, canonicalJson, parsePodsDocument } from './manifest.ts';
import { podFullName } from '../objects/pod-util.ts';

export interface StaticPodUrlSourceOptions {
  url: string;
  headers: Record<string, string[]>;
  nodeName: string;
  periodMs: number;
  logger: Logger;
  /** Deadline of one fetch (default 10 s, bounded by the period). */
  timeoutMs?: number;
}

export class StaticPodUrlSource implements PodSource {
  readonly name = 'http';
  private readonly log: Logger;
  private onSet: ((pods: V1Pod[]) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private fetching: Promise<void> | undefined;
  private lastGood: string | undefined;
  private lastProblem = '';
  /** config.seen per UID, kept while the pod stays. */
  private seen = new Map<string, string>();

  constructor(private readonly opts: StaticPodUrlSourceOptions) {
    this.log = opts.logger.child({ component: 'static-pod-url-source', source: 'http', url: opts.url });
  }

  /** Fetches once (the first set is reported before this resolves, when the URL answers), then every period. */
  async start(onSet: (pods: V1Pod[]) => void): Promise<void> {
    this.onSet = onSet;
    await this.fetchOnce();
    if (this.stopped) return;
    this.timer = setInterval(() => {
      if (!this.fetching) this.fetching = this.fetchOnce().finally(() => (this.fetching = undefined));
    }, Math.max(1000, this.opts.periodMs));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.fetching?.catch(() => {});
    this.onSet = undefined;
  }

  private async fetchOnce(): Promise<void> {
    let pods: V1Pod[];
    try {
      const text = await this.fetchText();
      await loadObjectModels();
      pods = parsePodsDocument(text, this.opts.url).map((p) => applyStaticPodDefaults(p, { nodeName: this.opts.nodeName, source: 'http', file: this.opts.url }));
    } catch (err) {
      const problem = errorMessage(err);
      if (problem !== this.lastProblem) this.log.warn({ err: problem, keeping: this.lastGood === undefined ? 'nothing yet' : 'the last good set' }, `static pod URL ${this.opts.url} failed; keeping the last good set`);
      this.lastProblem = problem;
      return;
    }
    if (this.lastProblem) this.log.info('static pod URL answers again');
    this.lastProblem = '';
    this.emit(pods);
  }

  private async fetchText(): Promise<string> {
    const headers = new Headers();
    for (const [name, values] of Object.entries(this.opts.headers)) for (const v of values) headers.append(name, v);
    const timeoutMs = Math.min(this.opts.timeoutMs ?? 10_000, Math.max(1000, this.opts.periodMs));
    const res = await fetch(this.opts.url, { headers, signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' }).catch((err: unknown) => {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new Error(`static pod manifest URL ${this.opts.url}: ${cause?.code ?? cause?.message ?? errorMessage(err)}`);
    });
    if (res.status !== 200) {
      await res.body?.cancel().catch(() => {});
      throw new Error(`static pod manifest URL ${this.opts.url}: HTTP ${res.status}`);
    }
    // Read no more than a manifest may be: a URL answering without end does not fill the heap.
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = res.body?.getReader();
    for (;;) {
      const next = await reader?.read();
      if (!next || next.done) break;
      size += next.value.byteLength;
      if (size > MAX_MANIFEST_BYTES) {
        await reader!.cancel().catch(() => {});
        throw new Error(`static pod manifest URL ${this.opts.url}: the answer is larger than ${MAX_MANIFEST_BYTES} bytes`);
      }
      chunks.push(next.value);
    }
    try {
      return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.concat(chunks));
    } catch {
      throw new Error(`static pod manifest URL ${this.opts.url}: the answer is not valid UTF-8`);
    }
  }

  /** Reports the set if it changed; of pods of one namespace/name, the first is kept and the others logged. */
  private emit(pods: V1Pod[]): void {
    if (this.stopped || !this.onSet) return;
    const byKey = new Map<string, V1Pod>();
    for (const p of pods) {
      const key = podFullName(p);
      if (byKey.has(key)) {
        this.log.warn({ pod: key }, 'the static pod URL lists a pod twice; keeping the first');
        continue;
      }
      byKey.set(key, p);
    }
    const kept = [...byKey.values()];
    const seen = new Map<string, string>();
    for (const p of kept) {
      const uid = p.metadata!.uid!;
      const first = this.seen.get(uid) ?? p.metadata!.annotations![CONFIG_SEEN_ANNOTATION]!;
      seen.set(uid, first);
      p.metadata!.annotations![CONFIG_SEEN_ANNOTATION] = first;
    }
    this.seen = seen;
    const signature = canonicalJson(kept.map((p) => p.metadata!.uid).sort());
    if (signature === this.lastGood) return;
    this.lastGood = signature;
    try {
      this.onSet(kept);
    } catch (err) {
      this.log.error({ err: errorMessage(err) }, 'the kubelet failed to take the pod set');
    }
  }
}
