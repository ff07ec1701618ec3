import {
  LeaseLostError,
  UnavailableError,
  type AcquireRequest,
  type AcquireResult,
  type BatchHandoffEntry,
  type BatchHandoffResult,
  type BatchRenewEntry,
  type BatchRenewResult,
  type GroupResponse,
  type CallOptions,
  type Grant,
  type GrantRef,
  type HandoffRequest,
  type HandoffResponse,
  type LeaseApi,
  type LeaseEvent,
  type MonotonicClock,
  type PublicLease,
  type RenewRequest,
  type SubscribeMessage,
  type WebSocketFactory,
  type WebSocketLike,
} from 'leasehold';
import { leaseLostReason } from '../../functions/lease-record.js';

/**
 * A fake of the verbs the leader uses. Every call waits until the test answers it, so a test
 * states exactly what the server said and when.
 */
export type Operation = 'acquire' | 'renew' | 'release' | 'handoff' | 'renew-batch' | 'handoff-batch' | 'group-describe';

export interface PendingCall {
  op: Operation;
  name: string;
  request: Record<string, unknown>;
  call: CallOptions | undefined;
  /** Monotonic time at which the call was made. */
  atMs: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  settled: boolean;
}

export class FakeLeaseApi implements LeaseApi {
  readonly calls: PendingCall[] = [];

  constructor(private readonly nowMs: () => number) {}

  acquire(name: string, request: object, call?: CallOptions): Promise<AcquireResult> {
    return this.record('acquire', name, request, call) as Promise<AcquireResult>;
  }

  renew(name: string, request: RenewRequest, call?: CallOptions): Promise<Grant> {
    return this.record('renew', name, request, call) as Promise<Grant>;
  }

  release(name: string, grant: GrantRef, call?: CallOptions): Promise<PublicLease> {
    return this.record('release', name, grant, call) as Promise<PublicLease>;
  }

  handoff(name: string, request: HandoffRequest, call?: CallOptions): Promise<HandoffResponse> {
    return this.record('handoff', name, request, call) as Promise<HandoffResponse>;
  }

  /** Calls of one kind, answered or not. */
  all(op: Operation): PendingCall[] {
    return this.calls.filter((c) => c.op === op);
  }

  /** The oldest unanswered call; fails the test if there is none or it is of another kind. */
  next(op: Operation): PendingCall {
    const pending = this.calls.find((c) => !c.settled);
    if (pending === undefined) throw new Error(`expected a pending ${op} call, found none`);
    if (pending.op !== op) throw new Error(`expected a pending ${op} call, found ${pending.op}`);
    return pending;
  }

  pending(): PendingCall[] {
    return this.calls.filter((c) => !c.settled);
  }

  private record(op: Operation, name: string, request: object, call: CallOptions | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const entry: PendingCall = {
        op,
        name,
        request: { ...request },
        call,
        atMs: this.nowMs(),
        settled: false,
        resolve: (value) => {
          if (entry.settled) return;
          entry.settled = true;
          resolve(value);
        },
        reject: (error) => {
          if (entry.settled) return;
          entry.settled = true;
          reject(error);
        },
      };
      call?.signal?.addEventListener('abort', () => entry.reject(call.signal?.reason), { once: true });
      this.calls.push(entry);
    });
  }
}

export function publicLease(overrides: Partial<PublicLease> = {}): PublicLease {
  return {
    name: 'jobs',
    holder: 'other',
    token: 7,
    ttlMs: 15_000,
    expiresAt: 1_000_015_000,
    remainingMs: 15_000,
    acquiredAt: 1_000_000_000,
    renewedAt: 1_000_000_000,
    transitions: 1,
    metadata: null,
    priority: 0,
    ...overrides,
  };
}

export function grant(overrides: Partial<Grant> = {}): Grant {
  return { ...publicLease({ holder: 'me' }), leaseId: '0123456789abcdef0123456789abcdef', holder: 'me', ...overrides };
}

// ── the watch ────────────────────────────────────────────────────────────────────────────────

/**
 * The server side of fake watch sockets: hands the WatchClient a `factory`, accepts and confirms
 * subscriptions by itself (unless told not to), and pushes events to the sockets subscribed to them.
 */
export class FakeWatchServer {
  readonly sockets: FakeSocket[] = [];
  /** Open new sockets by themselves. Default true. */
  autoAccept = true;
  /** Confirm each subscribe message by itself. Default true. */
  autoAck = true;
  /** New sockets fail to connect (error, then close). Default false. */
  refuse = false;

  readonly factory: WebSocketFactory = (url, init) => {
    const socket = new FakeSocket(this, url, init.headers);
    this.sockets.push(socket);
    if (this.refuse) queueMicrotask(() => socket.drop(1006, true));
    else if (this.autoAccept) queueMicrotask(() => socket.accept());
    return socket;
  };

  /** Sockets that are open now. */
  open(): FakeSocket[] {
    return this.sockets.filter((s) => s.readyState === 1);
  }

  /** The most recent socket. */
  get last(): FakeSocket {
    const socket = this.sockets.at(-1);
    if (socket === undefined) throw new Error('no socket was opened');
    return socket;
  }

  /** Pushes an event to every open socket whose confirmed subscriptions match it. */
  push(event: LeaseEvent): void {
    for (const socket of this.open()) if (socket.matches(event)) socket.deliver({ type: 'event', event });
  }
}

export class FakeSocket implements WebSocketLike {
  readyState = 0;
  onopen: WebSocketLike['onopen'] = null;
  onmessage: WebSocketLike['onmessage'] = null;
  onclose: WebSocketLike['onclose'] = null;
  onerror: WebSocketLike['onerror'] = null;
  /** Subscribe messages received, in order. */
  readonly sent: SubscribeMessage[] = [];
  private acked = 0;
  /** Confirmed keys (`n:<name>`, `p:<prefix>`) and whether renewals were asked for. */
  readonly confirmed = new Map<string, boolean>();
  closedByClient = false;

  constructor(
    private readonly server: FakeWatchServer,
    readonly url: string,
    readonly headers: Record<string, string>,
  ) {}

  send(data: string): void {
    if (this.readyState !== 1) throw new Error('send on a socket that is not open');
    this.sent.push(JSON.parse(data) as SubscribeMessage);
    if (this.server.autoAck) queueMicrotask(() => this.ack());
  }

  close(code = 1000): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.closedByClient = true;
    queueMicrotask(() => this.onclose?.({ code }));
  }

  /** Server side: the upgrade succeeded. */
  accept(): void {
    if (this.readyState !== 0) return;
    this.readyState = 1;
    this.onopen?.({});
  }

  /** Server side: confirms the oldest unconfirmed subscribe message. */
  ack(): void {
    const message = this.sent[this.acked];
    if (message === undefined || this.readyState !== 1) return;
    this.acked += 1;
    for (const name of message.names ?? []) this.confirmed.set(`n:${name}`, (this.confirmed.get(`n:${name}`) ?? false) || message.renewed === true);
    for (const prefix of message.prefixes ?? []) this.confirmed.set(`p:${prefix}`, (this.confirmed.get(`p:${prefix}`) ?? false) || message.renewed === true);
    this.deliver({ type: 'subscribed', names: message.names ?? [], prefixes: message.prefixes ?? [] });
  }

  /** Server side: answers the oldest unconfirmed subscribe message with an error. */
  reject(code: string, message: string): void {
    this.acked += 1;
    this.deliver({ type: 'error', error: { code, message } });
  }

  /** Server side: sends any message (or raw text). */
  deliver(message: unknown): void {
    if (this.readyState !== 1) return;
    this.onmessage?.({ data: typeof message === 'string' ? message : JSON.stringify(message) });
  }

  /** Server side: the connection breaks (or never opens). */
  drop(code = 1006, withError = false): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    if (withError) this.onerror?.({ error: new Error('connect ECONNREFUSED') });
    this.onclose?.({ code });
  }

  matches(event: LeaseEvent): boolean {
    const keys = [`n:${event.name}`, ...[...this.confirmed.keys()].filter((k) => k.startsWith('p:') && event.name.startsWith(k.slice(2)))];
    return keys.some((key) => this.confirmed.has(key) && (event.type !== 'renewed' || this.confirmed.get(key) === true));
  }
}

export function leaseEvent(overrides: Partial<LeaseEvent> & Pick<LeaseEvent, 'type'>): LeaseEvent {
  return { name: 'jobs', holder: 'other', token: 7, atMs: 1_000_000_000, ...overrides };
}

// ── a lease server in memory ─────────────────────────────────────────────────────────────────

interface Held {
  holder: string | undefined;
  token: number;
  leaseId: string;
  ttlMs: number;
  expiresAt: number;
  acquiredAt: number;
  renewedAt: number;
  transitions: number;
  reservedFor?: string;
  reservedUntil?: number;
  group?: string;
}

/**
 * The lease rules in memory, on a test's clock, for scenarios with several leaders: grants with
 * tokens, held answers with `retryAfterMs`, release, handoff with a reservation window, and the
 * watch events a real server pushes (after `pushDelayMs`). Answers come at once unless `down`.
 */
export class InMemoryLeaseServer implements LeaseApi {
  private readonly leases = new Map<string, Held>();
  private seq = 0;
  /** Every request, in order. */
  readonly log: Array<{ op: Operation; name: string; holder?: string; atMs: number }> = [];
  /** Unreachable: every request rejects with UnavailableError. */
  down = false;
  /** Batched handoffs fail as a whole (UnavailableError), as a request the table could not serve. */
  refuseHandoffBatches = false;

  constructor(
    private readonly clock: MonotonicClock,
    private readonly watch?: FakeWatchServer,
    private readonly pushDelayMs = 0,
  ) {}

  async acquire(name: string, request: AcquireRequest): Promise<AcquireResult> {
    this.enter('acquire', name, request.holder);
    const now = this.clock.nowMs();
    const current = this.leases.get(name);
    if (current !== undefined) {
      const held = current.holder !== undefined && now <= current.expiresAt;
      const reserved = current.reservedFor !== undefined && current.reservedFor !== request.holder && (current.reservedUntil ?? 0) >= now;
      if (held || reserved) {
        const until = held ? current.expiresAt : (current.reservedUntil as number);
        return { acquired: false, lease: this.publicOf(name, current), retryAfterMs: until + 1 - now };
      }
    }
    this.seq += 1;
    const next: Held = {
      ...(request.group === undefined ? {} : { group: request.group }),
      holder: request.holder,
      token: (current?.token ?? 0) + 1,
      leaseId: this.seq.toString(16).padStart(32, '0'),
      ttlMs: request.ttlMs,
      expiresAt: now + request.ttlMs,
      acquiredAt: now,
      renewedAt: now,
      transitions: (current?.transitions ?? 0) + 1,
    };
    this.leases.set(name, next);
    this.publish({ type: 'acquired', name, holder: request.holder, token: next.token, expiresAt: next.expiresAt, atMs: now });
    return { acquired: true, lease: this.grantOf(name, next) };
  }

  async renew(name: string, request: RenewRequest): Promise<Grant> {
    const current = this.mustBeCurrent('renew', name, request);
    const now = this.clock.nowMs();
    current.expiresAt = now + (request.ttlMs ?? current.ttlMs);
    current.renewedAt = now;
    return this.grantOf(name, current);
  }

  async release(name: string, grant: GrantRef): Promise<PublicLease> {
    const current = this.leases.get(name);
    if (current !== undefined && current.holder === undefined && current.leaseId === grant.leaseId && current.token === grant.token) {
      this.enter('release', name);
      return this.publicOf(name, current); // released twice: harmless
    }
    const held = this.mustBeCurrent('release', name, grant);
    const holder = held.holder as string;
    held.holder = undefined;
    this.publish({ type: 'released', name, holder, token: held.token, atMs: this.clock.nowMs() });
    return this.publicOf(name, held);
  }

  async handoff(name: string, request: HandoffRequest): Promise<HandoffResponse> {
    const held = this.mustBeCurrent('handoff', name, request);
    const now = this.clock.nowMs();
    const holder = held.holder as string;
    held.holder = undefined;
    held.reservedFor = request.to;
    held.reservedUntil = now + (request.windowMs ?? 5_000);
    this.publish({ type: 'handoff', name, holder, token: held.token, to: request.to, reservedUntil: held.reservedUntil, atMs: now });
    return { handedOff: true, to: request.to, reservedUntil: held.reservedUntil, lease: this.publicOf(name, held) };
  }

  /** Each entry renewed as `renew` would, answered in order (never all-or-nothing). One request in the log. */
  async renewBatch(prefix: string, grants: readonly BatchRenewEntry[]): Promise<BatchRenewResult[]> {
    this.enter('renew-batch', prefix);
    const results: BatchRenewResult[] = [];
    for (const entry of grants) {
      try {
        const current = this.mustBeCurrent('renew', entry.name, entry, false);
        const now = this.clock.nowMs();
        current.expiresAt = now + (entry.ttlMs ?? current.ttlMs);
        current.renewedAt = now;
        results.push({ name: entry.name, lease: this.grantOf(entry.name, current) });
      } catch (error) {
        if (!(error instanceof LeaseLostError)) throw error;
        results.push({ name: entry.name, error: error.toBody() });
      }
    }
    return results;
  }

  /**
   * Each entry handed off as `handoff` would, answered in order (never all-or-nothing). One
   * `handoff-batch` request in the log, then one `handoff` per entry, so a test counts partitions.
   */
  async handoffBatch(prefix: string, handoffs: readonly BatchHandoffEntry[]): Promise<BatchHandoffResult[]> {
    this.enter('handoff-batch', prefix);
    if (this.refuseHandoffBatches) throw new UnavailableError('the table could not be written');
    const results: BatchHandoffResult[] = [];
    for (const { name, ...request } of handoffs) {
      try {
        results.push({ name, ...(await this.handoff(name, request)) });
      } catch (error) {
        if (!(error instanceof LeaseLostError)) throw error;
        results.push({ name, error: error.toBody() });
      }
    }
    return results;
  }

  /** Every lease whose latest grant joined `group`, in name order (one page). */
  async describeGroup(group: string): Promise<GroupResponse> {
    this.enter('group-describe', group);
    const leases = [...this.leases.entries()]
      .filter(([, lease]) => lease.group === group)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, lease]) => this.publicOf(name, lease));
    return { group: { name: group, leases } };
  }

  /** The holder now, or null. */
  holderOf(name: string): string | null {
    const current = this.leases.get(name);
    return current?.holder !== undefined && this.clock.nowMs() <= current.expiresAt ? current.holder : null;
  }

  /** The instant the current grant expires on this server. */
  expiresAt(name: string): number | undefined {
    return this.leases.get(name)?.expiresAt;
  }

  private enter(op: Operation, name: string, holder?: string): void {
    this.log.push({ op, name, ...(holder !== undefined ? { holder } : {}), atMs: this.clock.nowMs() });
    if (this.down) throw new UnavailableError(`${op} of lease "${name}" could not reach the server: ECONNREFUSED.`);
  }

  private mustBeCurrent(op: Operation, name: string, ref: GrantRef, log = true): Held {
    if (log) this.enter(op, name);
    const current = this.leases.get(name);
    const live = current !== undefined && current.holder !== undefined && this.clock.nowMs() <= current.expiresAt;
    if (!live || current.leaseId !== ref.leaseId || current.token !== ref.token) {
      // The server's own decision table, so the SDK is tested against the reasons it will really get.
      throw new LeaseLostError(name, current ? this.publicOf(name, current) : null, leaseLostReason(current, ref));
    }
    return current;
  }

  private publish(event: LeaseEvent): void {
    const watch = this.watch;
    if (watch !== undefined) this.clock.setTimer(this.pushDelayMs, () => watch.push(event));
  }

  private publicOf(name: string, lease: Held): PublicLease {
    const now = this.clock.nowMs();
    const held = lease.holder !== undefined && now <= lease.expiresAt;
    return {
      name,
      holder: held ? (lease.holder as string) : null,
      token: lease.token,
      ttlMs: lease.ttlMs,
      expiresAt: lease.expiresAt,
      remainingMs: held ? lease.expiresAt - now : 0,
      acquiredAt: lease.acquiredAt,
      renewedAt: lease.renewedAt,
      transitions: lease.transitions,
      metadata: null,
      priority: 0,
      ...(lease.group === undefined ? {} : { group: lease.group }),
    };
  }

  private grantOf(name: string, lease: Held): Grant {
    return { ...this.publicOf(name, lease), holder: lease.holder as string, leaseId: lease.leaseId };
  }
}
