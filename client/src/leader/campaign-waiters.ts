import type { CancelTimer, MonotonicClock } from '../time/clock.js';
import type { TermInfo } from '../term/events.js';
import { expectNonNegative } from '../time/timing.js';
import { describeFailure, type NoticeRole } from '../term/wait-notices.js';

/**
 * The callers of a Leader's `campaign()` (a Semaphore's `acquire()`), waiting for its next term,
 * and what the campaign last heard, so that a caller who stops waiting (`signal`, `timeoutMs`)
 * learns why it was not elected: the last failure (as `cause`) or who holds the lease.
 */

/** What the campaign's last acquire came to, short of a grant. */
export type CampaignOutcome = { error: unknown } | { holder: string | null; token: number };

/**
 * `campaign({ signal, timeoutMs })` (or a Semaphore's `acquire`) gave up before a term began. The
 * campaign itself goes on (call `stop()` or `resign()` to end it). `cause` is the last acquire's
 * error, if the last acquire failed (or, aborted before any answer, the signal's reason); `holder`
 * who held the lease at the last answer, if one said it was held. Matched by `name` or `code`.
 */
export class NotElectedError extends Error {
  override name = 'NotElectedError' as const;
  readonly code = 'NOT_ELECTED' as const;
  /** The holder named by the last answer that found the lease held (null: reserved or in lock-delay); undefined if none did. */
  readonly holder: string | null | undefined;
  constructor(
    readonly leaseName: string,
    /** `timeout`: `timeoutMs` passed; `aborted`: the caller's `signal` aborted. */
    readonly why: 'timeout' | 'aborted',
    readonly waitedMs: number,
    last: CampaignOutcome | undefined,
    role: NoticeRole,
    endpoint: string | undefined,
    signalReason?: unknown,
  ) {
    const what =
      role === 'permit' ? `No permit of semaphore "${leaseName}" was acquired` : role === 'rwlock' ? `No grant of rwlock "${leaseName}" was acquired` : `Lease "${leaseName}" was not won`;
    const when = why === 'timeout' ? `within ${Math.round(waitedMs)} ms` : `before the campaign's signal aborted (after ${Math.round(waitedMs)} ms)`;
    let heard: string;
    if (last === undefined) heard = 'no acquire was answered yet';
    else if ('error' in last) heard = `the last acquire failed: ${describeFailure(last.error, endpoint)}`;
    else heard = last.holder === null ? 'it is reserved for another holder or in its lock-delay' : `it is held by ${last.holder} (token ${last.token})`;
    const cause = last !== undefined && 'error' in last ? last.error : signalReason;
    super(`${what} ${when}: ${heard}.`, cause === undefined ? {} : { cause });
    this.holder = last !== undefined && 'holder' in last ? last.holder : undefined;
  }
}

/** True for a NotElectedError; matched by name so two loaded copies of leasehold still agree. */
export function isNotElectedError(error: unknown): error is NotElectedError {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'NotElectedError';
}

interface Waiter {
  resolve(term: TermInfo): void;
  reject(error: unknown): void;
}

export class CampaignWaiters {
  private waiters: Waiter[] = [];
  private last: CampaignOutcome | undefined;

  constructor(
    private readonly name: string,
    private readonly clock: MonotonicClock,
    private readonly role: NoticeRole,
    private readonly endpoint: string | undefined,
  ) {}

  /** The campaign's acquire failed. */
  failed(error: unknown): void {
    this.last = { error };
  }

  /** The campaign's acquire found the lease held. */
  held(holder: string | null, token: number): void {
    this.last = { holder, token };
  }

  /**
   * A caller waiting for the next term. `started` is false when it was refused at once (a bad
   * `timeoutMs`, a signal already aborted): then nothing need be started for it.
   */
  wait(options: { signal?: AbortSignal | undefined; timeoutMs?: number | undefined }): { elected: Promise<TermInfo>; started: boolean } {
    const { signal, timeoutMs } = options;
    try {
      if (timeoutMs !== undefined) expectNonNegative('timeoutMs', timeoutMs);
    } catch (error) {
      return { elected: Promise.reject(error), started: false };
    }
    const startedMs = this.clock.nowMs();
    const giveUp = (why: 'timeout' | 'aborted') =>
      why === 'timeout'
        ? new NotElectedError(this.name, why, timeoutMs ?? 0, this.last, this.role, this.endpoint)
        : new NotElectedError(this.name, why, this.clock.nowMs() - startedMs, this.last, this.role, this.endpoint, signal?.reason);
    if (signal?.aborted) return { elected: Promise.reject(giveUp('aborted')), started: false };
    const elected = new Promise<TermInfo>((resolve, reject) => {
      let cancelTimer: CancelTimer | undefined;
      const done = () => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        signal?.removeEventListener('abort', onAbort);
        cancelTimer?.();
      };
      const waiter: Waiter = {
        resolve: (term) => {
          done();
          resolve(term);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      };
      const onAbort = () => waiter.reject(giveUp('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) cancelTimer = this.clock.setTimer(timeoutMs, () => waiter.reject(giveUp('timeout')));
      this.waiters.push(waiter);
    });
    return { elected, started: true };
  }

  /** A term began: every waiter gets it, and what came before it is forgotten. */
  resolveAll(term: TermInfo): void {
    this.last = undefined;
    for (const waiter of [...this.waiters]) waiter.resolve(term);
  }

  /** The campaign ended (resign, stop, the invocation's end): every waiter gets `error`. */
  rejectAll(error: unknown): void {
    for (const waiter of [...this.waiters]) waiter.reject(error);
  }
}
