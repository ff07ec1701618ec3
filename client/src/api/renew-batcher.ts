import type { MonotonicClock, CancelTimer } from '../time/clock.js';
import {
  InternalError,
  LIMITS,
  UnavailableError,
  RENEW_GRANT_FIELDS,
  errorFromBody,
  pickFields,
  type BatchRenewEntry,
  type BatchRenewResult,
  type Grant,
  type RenewRequest,
} from '../protocol/index.js';
import type { CallOptions } from '../transport/http.js';

/**
 * Renewals of many leases under one name prefix, coalesced into batched renew requests
 * (`POST /v1/prefixes/{prefix}/renew`): a process that holds thousands of leases makes
 * one request per window instead of one per lease. LeaseClient keeps one for its `batch` option;
 * a lease group member keeps one for its own leases (`group/renewals.ts`).
 *
 * A renewal asked for is held at most its window (or until 100 are waiting), then sent with the
 * others in one request. The default window is 1 % of the lease's ttl, at most 1 s: a renewal is
 * due every ttl/3 less 1 % of the ttl, so it still lands on time, and at 10,000 leases of 300 s
 * (100 renewals a second) a second's worth travels together. Each caller gets its own answer: its
 * grant, or the error the single renew would have raised (`LeaseLostError` with its reason). A
 * batch that fails as a whole (network, 5xx, throttling) fails every renewal in it with that error,
 * and each Leader retries its own as for a single renew, until its own deadline.
 *
 * Fail-closed timing is unchanged: a Leader counts a renewal's validity from when it *asked*
 * (before the request that carries it left, so at most `windowMs` more conservative than counting
 * from the send), and a batch lost in flight extends nothing.
 */
export interface BatchOptions {
  /** Renewals of leases whose names start with this (1-200 characters of the name alphabet) are batched. */
  prefix: string;
  /**
   * The longest a renewal waits for others to travel with. Default: 1 % of its lease's ttl, at most
   * 1,000 ms (20 ms for a renewal that names no ttl). 0 sends each at the next tick.
   */
  windowMs?: number;
}

/** The window of a renewal whose ttl is unknown (a renew without `ttlMs`). */
export const DEFAULT_BATCH_WINDOW_MS = 20;
/** The default window as a share of the lease's ttl. */
export const BATCH_WINDOW_TTL_FRACTION = 0.01;
/** A window longer than this would eat into the renewal's margin (ttl/3 less 1 % of the ttl). */
export const MAX_BATCH_WINDOW_MS = 1_000;

/**
 * How a batcher speaks its batch route: the entry a renewal sends, and what each result means. The
 * leases' is the default; the rwlocks' (`rwlock/batch.ts`) speaks `POST /v1/prefixes/{prefix}/rwlocks/renew`.
 */
export interface BatchCodec<Request, Entry extends { name: string }, Result extends { name: string }, Answer> {
  /** The entry sent for a renewal of `name` (already validated). */
  entry(name: string, request: Request): Entry;
  /** The ttl the renewal names, if any: its default window is a share of it. */
  ttlMsOf(request: Request): number | undefined;
  /** An entry's result: its answer, or the error the single renew would have raised. */
  decode(result: Result, name: string): { answer: Answer } | { error: unknown };
  /** What a renewal renews, for messages ("lease"). */
  noun: string;
}

/** The leases' batched renew (`POST /v1/prefixes/{prefix}/renew`). */
export const LEASE_BATCH_CODEC: BatchCodec<RenewRequest, BatchRenewEntry, BatchRenewResult, Grant> = {
  // metadata travels only when asked for: a renewal that carries it is a proclaim.
  entry: (name, request) => ({ ...pickFields(request, RENEW_GRANT_FIELDS), ...(request.metadata === undefined ? {} : { metadata: request.metadata }), name }),
  ttlMsOf: (request) => request.ttlMs,
  decode: (result, name) => ('lease' in result ? { answer: result.lease } : { error: errorFromBody(result.error, name) }),
  noun: 'lease',
};

interface Pending<Entry, Answer> {
  entry: Entry;
  call: CallOptions;
  askedAtMs: number;
  /** When it must be sent at the latest. */
  sendByMs: number;
  settled: boolean;
  resolve(answer: Answer): void;
  reject(error: unknown): void;
  /** Removes the abort listener from the caller's signal once settled (a long-lived signal must not keep it). */
  unlisten?: () => void;
}

export type SendBatch<Entry = BatchRenewEntry, Result = BatchRenewResult> = (prefix: string, entries: Entry[], call: CallOptions) => Promise<Result[]>;

export class RenewBatcher<Request = RenewRequest, Entry extends { name: string } = BatchRenewEntry, Result extends { name: string } = BatchRenewResult, Answer = Grant> {
  readonly prefix: string;
  private readonly windowMs: number | undefined;
  private queue: Array<Pending<Entry, Answer>> = [];
  private cancelFlush: CancelTimer | undefined;
  private flushAtMs = Number.POSITIVE_INFINITY;

  constructor(
    options: BatchOptions,
    private readonly send: SendBatch<Entry, Result>,
    private readonly clock: MonotonicClock,
    // The type parameters' defaults are the leases' codec's types.
    private readonly codec: BatchCodec<Request, Entry, Result, Answer> = LEASE_BATCH_CODEC as unknown as BatchCodec<Request, Entry, Result, Answer>,
  ) {
    this.prefix = options.prefix;
    this.windowMs = options.windowMs;
    if (this.windowMs !== undefined && (!Number.isFinite(this.windowMs) || this.windowMs < 0 || this.windowMs > MAX_BATCH_WINDOW_MS)) {
      throw new RangeError(`Expected \`batch.windowMs\` from 0 to ${MAX_BATCH_WINDOW_MS}, got ${options.windowMs}.`);
    }
  }

  private windowFor(request: Request): number {
    if (this.windowMs !== undefined) return this.windowMs;
    const ttlMs = this.codec.ttlMsOf(request);
    if (ttlMs === undefined) return DEFAULT_BATCH_WINDOW_MS;
    return Math.min(MAX_BATCH_WINDOW_MS, Math.floor(ttlMs * BATCH_WINDOW_TTL_FRACTION));
  }

  covers(name: string): boolean {
    return name.startsWith(this.prefix);
  }

  /** Queues one renewal (already validated); settles with its own outcome. */
  renew(name: string, request: Request, call: CallOptions = {}): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const signal = call.signal;
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const askedAtMs = this.clock.nowMs();
      const pending: Pending<Entry, Answer> = {
        entry: this.codec.entry(name, request),
        call,
        askedAtMs,
        sendByMs: askedAtMs + this.windowFor(request),
        settled: false,
        resolve,
        reject,
      };
      // An aborted renewal is answered at once; if its batch is already in flight, it still renews
      // on the server, which is harmless (the Leader that aborted it does not count on it).
      if (signal !== undefined) {
        const onAbort = () => settle(pending, { error: signal.reason });
        signal.addEventListener('abort', onAbort, { once: true });
        pending.unlisten = () => signal.removeEventListener('abort', onAbort);
      }
      this.queue.push(pending);
      if (this.queue.length >= LIMITS.batchMaxGrants) this.flush();
      else if (pending.sendByMs < this.flushAtMs) {
        // The batch leaves when its most pressed renewal must.
        this.cancelFlush?.();
        this.flushAtMs = pending.sendByMs;
        this.cancelFlush = this.clock.setTimer(pending.sendByMs - askedAtMs, () => this.flush());
      }
    });
  }

  private flush(): void {
    this.cancelFlush?.();
    this.cancelFlush = undefined;
    this.flushAtMs = Number.POSITIVE_INFINITY;
    const ready = this.queue.splice(0).filter((p) => !p.settled);
    for (let i = 0; i < ready.length; i += LIMITS.batchMaxGrants) void this.sendChunk(ready.slice(i, i + LIMITS.batchMaxGrants));
  }

  private async sendChunk(chunk: Array<Pending<Entry, Answer>>): Promise<void> {
    if (chunk.length === 0) return;
    const limits = this.limitsOf(chunk);
    // An entry with a shorter time limit than the batch's is answered at its own limit; the batch
    // goes on for the others (one lease near its deadline must not fail a whole member's renewals).
    const cancels = chunk.map((p, i) => {
      const ownMs = limits.own[i];
      if (ownMs === undefined || limits.call.timeoutMs === undefined || ownMs >= limits.call.timeoutMs) return undefined;
      return this.clock.setTimer(ownMs, () =>
        settle(p, { error: new UnavailableError(`The renewal of ${this.codec.noun} "${p.entry.name}" timed out after ${Math.round(ownMs)} ms (its batch was still in flight).`) }),
      );
    });
    const results = await this.send(this.prefix, chunk.map((p) => p.entry), limits.call).catch((error: unknown) => error as Error);
    for (const cancel of cancels) cancel?.();
    if (!Array.isArray(results)) {
      for (const p of chunk) settle(p, { error: results });
      return;
    }
    chunk.forEach((p, i) => {
      const result = results[i];
      if (result === undefined || result.name !== p.entry.name) {
        settle(p, { error: new InternalError(`The batched renew answered entry ${i} for another ${this.codec.noun} than "${p.entry.name}".`) });
      } else {
        const decoded = this.codec.decode(result, p.entry.name);
        settle(p, 'answer' in decoded ? { answer: decoded.answer } : decoded);
      }
    });
  }

  /**
   * The batch's limits: the loosest time limit of its entries (each counting its time in the
   * queue), each entry's own, and the fewest retries any entry allows.
   */
  private limitsOf(chunk: Array<Pending<Entry, Answer>>): { call: CallOptions; own: Array<number | undefined> } {
    const now = this.clock.nowMs();
    const own = chunk.map((p) => (p.call.timeoutMs === undefined ? undefined : Math.max(1, p.call.timeoutMs - (now - p.askedAtMs))));
    const timeouts = own.filter((t): t is number => t !== undefined);
    // An entry without a limit takes the client's default, which may be the loosest: then the batch has none of its own.
    const loosest = timeouts.length === chunk.length ? Math.max(...timeouts) : undefined;
    const retries = chunk.filter((p) => p.call.retries !== undefined).map((p) => p.call.retries as number);
    return {
      call: { ...(loosest === undefined ? {} : { timeoutMs: loosest }), ...(retries.length > 0 ? { retries: Math.min(...retries) } : {}) },
      own,
    };
  }
}

function settle<Answer>(p: Pending<unknown, Answer>, outcome: { answer: Answer } | { error: unknown }): void {
  if (p.settled) return;
  p.settled = true;
  p.unlisten?.();
  if ('answer' in outcome) p.resolve(outcome.answer);
  else p.reject(outcome.error);
}
