/**
 * Who may hold the main port's connections. A connection is a stranger's until it proves
 * otherwise: it completes the TLS handshake with a client certificate that verifies against
 * the client CA (the API server's CN=kube-apiserver-kubelet-client), or a request on it
 * authenticates (a token the API server's TokenReview accepted). Until then it lives in a
 * small budget of its own, per peer address and in all, where a new stranger pushes out the
 * least promising old one (a socket that never sent a byte, then one idle after its
 * handshake); one that is handshaking or whose request is being authenticated is left to
 * its deadline. Authenticated connections are never pushed out by strangers;
 * they have a cap of their own that only authenticated clients can fill.
 *
 * Upstream's kubelet (Go's HTTP server) has no connection cap at all: each connection is a
 * goroutine of a few KiB and the file descriptor limit is the bound. A Node process holds a
 * TLS socket in tens of KiB of heap and shares one event loop, so the budget keeps a flood
 * bounded in memory and in work while clients that can authenticate are served.
 *
 * The numbers (see DEFAULT_BUDGET): a handshake gets 5 s (on loopback or a LAN it takes
 * milliseconds; upstream's clients give up after 10 s), a handshaken connection 10 s to send a
 * request that authenticates; 512 strangers in all keep the flood's heap at a few tens of MiB,
 * and 128 per address let one API server open dozens of connections at once (a burst of
 * `kubectl logs`) while one address alone cannot fill the budget.
 */
import type net from 'node:net';
import type tls from 'node:tls';
import type { Logger } from '../logger.ts';

export interface ConnectionLimits {
  /** Connections not (yet) authenticated, in all. */
  unauthenticated: number;
  /** Connections not (yet) authenticated, from one peer address. */
  unauthenticatedPerPeer: number;
  /** Authenticated connections (only authenticated clients can fill this). */
  authenticated: number;
  /** Time from connect to a completed TLS handshake. */
  handshakeMs: number;
  /** Time from a completed handshake to a request that authenticates. */
  authenticateMs: number;
}

export const DEFAULT_BUDGET: Readonly<ConnectionLimits> = Object.freeze({
  unauthenticated: 512,
  unauthenticatedPerPeer: 128,
  authenticated: 1024,
  handshakeMs: 5_000,
  authenticateMs: 10_000,
});

/** A stranger younger than this is never closed to make room (it may not have been read yet). */
const SILENT_GRACE_MS = 200;
/**
 * Strangers too young to judge may exceed the budget up to this many times it; past that a
 * newcomer is closed at once. Reached only by a burst of that many connections within
 * SILENT_GRACE_MS (older ones are judged and closed first).
 */
const HARD_FACTOR = 4;

/**
 * Where a connection is: `connected` (TCP only, nothing received), `handshaking` (its first
 * bytes arrived: the TLS server has it), `secure` (handshake done, nothing authenticated yet),
 * `requesting` (a request on it is being authenticated), `authenticated`.
 */
type Stage = 'connected' | 'handshaking' | 'secure' | 'requesting' | 'authenticated';

interface Entry {
  /** `address|port` of the peer, taken at accept (a destroyed socket forgets its address). */
  key: string;
  raw: net.Socket;
  peer: string;
  stage: Stage;
  /** When it entered its stage. */
  since: number;
}

/** How the sweep and the eviction name what they closed (for the log). */
type Counts = { evicted: number; refused: number; timedOut: number; refusedAuthenticated: number };

export class ConnectionBudget {
  /** Every open connection of the port, by `address|port` of its peer (the raw and the TLS socket share it). */
  private readonly entries = new Map<string, Entry>();
  private readonly unauthPerPeer = new Map<string, number>();
  private unauth = 0;
  private auth = 0;
  private readonly sweeper: NodeJS.Timeout;
  private counts: Counts = { evicted: 0, refused: 0, timedOut: 0, refusedAuthenticated: 0 };
  private lastReport = 0;

  constructor(private readonly limits: ConnectionLimits, private readonly logger: Logger) {
    this.sweeper = setInterval(() => this.sweep(Date.now()), 1000);
    this.sweeper.unref();
  }

  /** Connections now: strangers and authenticated. */
  get load(): { unauthenticated: number; authenticated: number } {
    return { unauthenticated: this.unauth, authenticated: this.auth };
  }

  /** Follows the TLS server's handshakes (its connections come from accept()). */
  attach(server: tls.Server): void {
    server.on('secureConnection', (socket: tls.TLSSocket) => this.handshaken(socket));
  }

  /**
   * A TCP connection accepted by the port's listener. It costs a plain socket until its first
   * bytes arrive; only then is it handed (`toTls`) to the TLS server, which makes its TLS
   * state: a socket that never speaks never costs a TLS session.
   */
  accept(raw: net.Socket, toTls: (raw: net.Socket) => void): void {
    raw.on('error', () => raw.destroy());
    if (!this.accepted(raw)) return;
    raw.once('data', (chunk: Buffer) => {
      raw.pause();
      // The TLS socket reads what is buffered on the socket it wraps before reading on.
      raw.unshift(chunk);
      const e = this.entries.get(keyOf(raw));
      if (e?.raw === raw && e.stage === 'connected') this.move(e, 'handshaking');
      toTls(raw);
    });
  }

  /** A request arrived on the connection: it is not pushed out while it is being authenticated. */
  requesting(socket: net.Socket): void {
    const e = this.entries.get(keyOf(socket));
    if (e && e.stage !== 'authenticated') this.move(e, 'requesting');
  }

  /** A request on the connection was refused (401): the connection is a stranger's again. */
  refused(socket: net.Socket): void {
    const e = this.entries.get(keyOf(socket));
    if (e && e.stage === 'requesting') this.move(e, 'secure');
  }

  /**
   * A request on the connection authenticated: it leaves the strangers' budget. False when the
   * authenticated cap is full (the caller answers 429 and the connection closes).
   */
  authenticated(socket: net.Socket): boolean {
    const e = this.entries.get(keyOf(socket));
    if (!e || e.stage === 'authenticated') return true;
    if (this.auth >= this.limits.authenticated) {
      this.counts.refusedAuthenticated++;
      this.report();
      return false;
    }
    this.move(e, 'authenticated');
    return true;
  }

  /** Stops the deadlines and closes the connections that never reached the TLS server. */
  close(): void {
    clearInterval(this.sweeper);
    for (const e of [...this.entries.values()]) if (e.stage === 'connected') this.drop(e);
  }

  /** Counts a new connection in; false when it was closed at once. */
  private accepted(raw: net.Socket): boolean {
    const peer = raw.remoteAddress;
    if (!peer || raw.remotePort === undefined) {
      raw.destroy();
      return false;
    }
    const key = keyOf(raw);
    const e: Entry = { key, raw, peer: normalizePeer(peer), stage: 'connected', since: Date.now() };
    this.entries.set(key, e);
    this.count(e, +1);
    raw.once('close', () => {
      if (this.entries.get(key) !== e) return;
      this.entries.delete(key);
      this.count(e, -1);
    });
    // Far over the budget (HARD_FACTOR times it, all too young to judge): the newcomer goes.
    if ((this.unauthPerPeer.get(e.peer) ?? 0) > HARD_FACTOR * this.limits.unauthenticatedPerPeer || this.unauth > HARD_FACTOR * this.limits.unauthenticated) {
      this.drop(e);
      this.counts.refused++;
      this.report();
      return false;
    }
    // Over the budget: strangers go, the least promising first.
    this.trim((x) => x.peer === e.peer, () => this.unauthPerPeer.get(e.peer) ?? 0, this.limits.unauthenticatedPerPeer);
    this.trim(() => true, () => this.unauth, this.limits.unauthenticated);
    return this.entries.get(key) === e;
  }

  private handshaken(socket: tls.TLSSocket): void {
    const e = this.entries.get(keyOf(socket));
    if (!e) return;
    // A client certificate that verified against the client CA: only the API server (or
    // another holder of a cluster-issued certificate) gets here.
    if (socket.authorized && this.auth < this.limits.authenticated) this.move(e, 'authenticated');
    else if (e.stage === 'connected' || e.stage === 'handshaking') this.move(e, 'secure');
  }

  private move(e: Entry, stage: Stage): void {
    this.count(e, -1);
    e.stage = stage;
    e.since = Date.now();
    this.count(e, +1);
  }

  private count(e: Entry, d: 1 | -1): void {
    if (e.stage === 'authenticated') {
      this.auth += d;
      return;
    }
    this.unauth += d;
    const n = (this.unauthPerPeer.get(e.peer) ?? 0) + d;
    if (n > 0) this.unauthPerPeer.set(e.peer, n);
    else this.unauthPerPeer.delete(e.peer);
  }

  /**
   * Brings the strangers `which` selects down to `limit`, closing those least likely to be
   * clients: one that sent nothing for SILENT_GRACE_MS since it connected (the longest silent
   * first), then one idle that long after its handshake. A younger socket may not have been
   * read yet (a batch of accepts comes before any read), and one handshaking or whose request
   * is being authenticated is left to its deadline: these may stay over the limit.
   */
  private trim(which: (x: Entry) => boolean, count: () => number, limit: number): void {
    if (count() <= limit) return;
    const now = Date.now();
    const candidates: Array<{ x: Entry; rank: number }> = [];
    for (const x of this.entries.values()) {
      if (x.stage === 'authenticated' || !which(x) || now - x.since < SILENT_GRACE_MS) continue;
      const rank = x.stage === 'connected' ? 0 : x.stage === 'secure' ? 1 : undefined;
      if (rank !== undefined) candidates.push({ x, rank });
    }
    candidates.sort((p, q) => p.rank - q.rank || p.x.since - q.x.since);
    for (const { x } of candidates) {
      if (count() <= limit) break;
      this.drop(x);
      this.counts.evicted++;
    }
    this.report();
  }

  /** Closes strangers past their deadline: the handshake's, then the first authenticated request's. */
  private sweep(now: number): void {
    for (const e of this.entries.values()) {
      // The handshake's deadline counts from the connect (the TLS server's own timer from the first bytes).
      const limit = e.stage === 'connected' ? this.limits.handshakeMs : e.stage === 'secure' ? this.limits.authenticateMs : undefined;
      if (limit === undefined || now - e.since <= limit) continue;
      this.drop(e);
      this.counts.timedOut++;
    }
    // Over the budget with strangers now old enough to judge.
    for (const peer of [...this.unauthPerPeer.keys()]) this.trim((x) => x.peer === peer, () => this.unauthPerPeer.get(peer) ?? 0, this.limits.unauthenticatedPerPeer);
    this.trim(() => true, () => this.unauth, this.limits.unauthenticated);
    this.report();
  }

  private drop(e: Entry): void {
    if (this.entries.get(e.key) === e) {
      this.entries.delete(e.key);
      this.count(e, -1);
    }
    e.raw.destroy();
  }

  /** One log line a minute at most about strangers closed, with how many. */
  private report(): void {
    const c = this.counts;
    if (c.evicted + c.refused + c.timedOut + c.refusedAuthenticated === 0) return;
    const now = Date.now();
    if (now - this.lastReport < 60_000) return;
    this.lastReport = now;
    this.logger.warn({ ...c, unauthenticated: this.unauth, authenticated: this.auth, limits: this.limits }, 'main port: closed connections that did not authenticate in time or over the budget of unauthenticated connections');
    this.counts = { evicted: 0, refused: 0, timedOut: 0, refusedAuthenticated: 0 };
  }
}

/** `address|port` of the peer: the same for the TCP socket and the TLS socket on it. */
function keyOf(s: net.Socket): string {
  return `${s.remoteAddress}|${s.remotePort}`;
}

/** An IPv4 peer is one address whether it arrived on an IPv4 or an IPv6 socket. */
function normalizePeer(address: string): string {
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}
