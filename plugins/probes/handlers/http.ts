import { errorMessage, secondsToTimerMs } from 'kubelet-ts';
import http from 'node:http';
import https from 'node:https';
import type { ProbeHandlerSpec } from '../probe-spec.ts';
import { resolveProbePort } from './port.ts';
import { MAX_OUTPUT_BYTES, PROBE_USER_AGENT, joinHostPort, truncate, type ProbeRunResult, type ProbeTarget } from './types.ts';

type HttpGetSpec = Extract<ProbeHandlerSpec, { kind: 'httpGet' }>;

/** upstream (Go's http.Client default, kept by RedirectChecker): at most 10 redirects. */
const MAX_REDIRECTS = 10;
/** Go's client follows these; other 3xx come back as the response. */
const FOLLOWED = new Set([301, 302, 303, 307, 308]);

interface Hop { status: number; location: string | undefined; body: string }

/** The probe's URL (upstream NewRequestForHTTPGetAction / formatURL): host defaults to the pod IP. */
export function probeURL(spec: HttpGetSpec, target: ProbeTarget): URL {
  const host = spec.host || target.podIP;
  if (!host) throw new Error('the pod has no IP yet');
  const port = resolveProbePort(spec.port, target.container);
  const path = spec.path.startsWith('/') ? spec.path : `/${spec.path}`;
  return new URL(`${spec.scheme}://${joinHostPort(host, port)}${path}`);
}

/**
 * The request headers (upstream newProbeRequest): the probe's httpHeaders (repeated names
 * are all sent), `User-Agent: kube-probe/...` and `Accept: *\/*` unless given; an empty
 * Accept removes it; a Host header sets the request's host.
 */
export function probeHeaders(spec: HttpGetSpec): Record<string, string | string[]> {
  const out: Record<string, string[]> = {};
  const names = new Map<string, string>();
  for (const h of spec.headers) {
    const key = h.name.toLowerCase();
    const name = names.get(key) ?? h.name;
    names.set(key, name);
    (out[name] ??= []).push(h.value);
  }
  const has = (n: string) => names.has(n.toLowerCase());
  if (!has('user-agent')) out['User-Agent'] = [PROBE_USER_AGENT];
  if (!has('accept')) out['Accept'] = ['*/*'];
  else {
    const name = names.get('accept')!;
    if (out[name]!.every((v) => v === '')) delete out[name];
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.length === 1 ? v[0]! : v]));
}

function get(url: URL, headers: Record<string, string | string[]>, signal: AbortSignal): Promise<Hop> {
  return new Promise((resolve, reject) => {
    const lib = url.protocol === 'https:' ? https : http;
    // No keep-alive (a fresh connection per probe, as upstream's DisableKeepAlives); TLS unverified.
    const req = lib.request(url, { method: 'GET', headers, agent: false, rejectUnauthorized: false, signal }, (res) => {
      let body = '';
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        resolve({ status: res.statusCode ?? 0, location: res.headers.location, body });
      };
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
        // Bodies are cut at 10 KiB (upstream reads at most that much, and goes on).
        if (body.length >= MAX_OUTPUT_BYTES) {
          body = body.slice(0, MAX_OUTPUT_BYTES);
          finish();
          res.destroy();
        }
      });
      res.on('end', finish);
      res.on('error', (err) => (done ? undefined : reject(err)));
      res.on('close', finish);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A Node socket error in the words of Go's net package, as upstream outputs show them. */
function describe(err: unknown, url: URL): string {
  const e = err as NodeJS.ErrnoException;
  const addr = url.host;
  if (e.code === 'ECONNREFUSED') return `dial tcp ${addr}: connect: connection refused`;
  if (e.code === 'EHOSTUNREACH') return `dial tcp ${addr}: connect: no route to host`;
  if (e.code === 'ENETUNREACH') return `dial tcp ${addr}: connect: network is unreachable`;
  if (e.code === 'ECONNRESET') return 'read: connection reset by peer';
  return errorMessage(err);
}

/**
 * An HTTP GET probe (upstream pkg/probe/http): HTTP or HTTPS without certificate checks;
 * status 200–399 is success (the body is the output), anything else a failure
 * (`HTTP probe failed with statuscode: N`); a connection error or the timeout is a failure with
 * Go's words. Redirects are followed as upstream's RedirectChecker(followNonLocalRedirects =
 * false) does: within the same host name up to 10 times; a redirect to another host is not
 * followed and the 3xx itself counts as a success with a warning. The timeout covers the whole
 * exchange, redirects included (Go's Client.Timeout).
 */
export async function httpProbe(spec: HttpGetSpec, target: ProbeTarget): Promise<ProbeRunResult> {
  let url: URL;
  try {
    url = probeURL(spec, target);
  } catch (err) {
    return { error: errorMessage(err) };
  }
  const headers = probeHeaders(spec);
  const controller = new AbortController();
  const timeoutMs = secondsToTimerMs(target.timeoutSeconds);
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  timer.unref();
  const first = url;
  let current = url;
  try {
    for (let redirects = 0; ; redirects++) {
      let hop: Hop;
      try {
        hop = await get(current, headers, controller.signal);
      } catch (err) {
        if (controller.signal.aborted) return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)` };
        return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: ${describe(err, current)}` };
      }
      if (FOLLOWED.has(hop.status) && hop.location) {
        const next = new URL(hop.location, current);
        if (next.hostname === first.hostname) {
          if (redirects + 1 >= MAX_REDIRECTS) return { result: 'failure', output: `Get ${JSON.stringify(next.href)}: stopped after ${MAX_REDIRECTS} redirects` };
          // A Host header applies to the original host only (Go keeps it for relative redirects).
          if (/^([a-z][a-z0-9+.-]*:|\/\/)/i.test(hop.location)) {
            for (const k of Object.keys(headers)) if (k.toLowerCase() === 'host') delete headers[k];
          }
          current = next;
          continue;
        }
      }
      if (hop.status >= 200 && hop.status < 400) {
        if (hop.status >= 300) return { result: 'success', output: `Probe terminated redirects, Response body: ${truncate(hop.body)}`, warning: true };
        return { result: 'success', output: hop.body };
      }
      // upstream keeps the body out of the failure message (kubernetes/kubernetes#99425).
      return { result: 'failure', output: `HTTP probe failed with statuscode: ${hop.status}` };
    }
  } finally {
    clearTimeout(timer);
  }
}
