import type { TermContext } from '../term/context.js';
import type { HealthCheckFailure } from '../term/events.js';
import type { Timing } from '../time/timing.js';
import { expectPositive } from '../time/timing.js';

/**
 * Health-aware leadership: a leader that cannot do its work should not keep the lease.
 *
 * The check runs before every scheduled renewal. `unhealthyAfter` failures in a row (false, a
 * throw, or no answer within `healthCheckTimeoutMs`) end the term with reason `unhealthy` and
 * release the lease at once, so a healthy follower takes over now instead of after a ttl. A
 * leader whose check keeps failing steps down at its `unhealthyAfter`-th check, which comes before
 * its deadline (the check's time limit never reaches past it), so it stops leading while its lease
 * is still valid on the server. Not leading, the leader campaigns only right after a check passes,
 * and while checks fail it checks again every `renewEveryMs`.
 *
 * Fail-closed: a check that throws counts as a failure, and the error goes to `onEvent` (an
 * `error` event), never to an unhandled rejection; so does a rejection that arrives after the
 * check already timed out.
 */

/** Resolves true (or nothing) when healthy, false when not. `signal` aborts at the time limit. */
export type HealthCheck = (signal: AbortSignal) => Promise<boolean | void>;

export interface HealthOptions {
  /** Checked before each renewal and before each campaign attempt. Default: none (always healthy). */
  healthCheck?: HealthCheck;
  /** Time limit of one check; its signal aborts then. Default `min(renewEveryMs / 2, 5000)`; must be less than `renewEveryMs`. */
  healthCheckTimeoutMs?: number;
  /** Failed checks in a row after which a leader steps down. Default 2; an integer ≥ 1. */
  unhealthyAfter?: number;
}

export interface HealthSettings {
  check: HealthCheck;
  timeoutMs: number;
  unhealthyAfter: number;
}

export const DEFAULT_UNHEALTHY_AFTER = 2;

export function defaultHealthCheckTimeoutMs(renewEveryMs: number): number {
  return Math.min(renewEveryMs / 2, 5_000);
}

/** Applies defaults and validates; undefined when no check is configured. Throws TypeError or RangeError. */
export function resolveHealth(options: HealthOptions, timing: Timing): HealthSettings | undefined {
  const { healthCheck } = options;
  if (healthCheck !== undefined && typeof healthCheck !== 'function') {
    throw new TypeError(`Expected \`healthCheck\` to be a function, got ${typeof healthCheck}.`);
  }
  const timeoutMs = options.healthCheckTimeoutMs ?? defaultHealthCheckTimeoutMs(timing.renewEveryMs);
  expectPositive('healthCheckTimeoutMs', timeoutMs);
  if (timeoutMs >= timing.renewEveryMs) {
    throw new RangeError(
      `Expected \`healthCheckTimeoutMs\` (${timeoutMs}) to be less than \`renewEveryMs\` (${timing.renewEveryMs}), ` +
        'so that a check ends well before the renewal after it is due.',
    );
  }
  const unhealthyAfter = options.unhealthyAfter ?? DEFAULT_UNHEALTHY_AFTER;
  if (typeof unhealthyAfter !== 'number' || !Number.isInteger(unhealthyAfter) || unhealthyAfter < 1) {
    throw new TypeError(`Expected \`unhealthyAfter\` to be an integer of at least 1, got ${String(unhealthyAfter)}.`);
  }
  return healthCheck === undefined ? undefined : { check: healthCheck, timeoutMs, unhealthyAfter };
}

export type { HealthCheckFailure };

type Outcome = { ok: true } | { ok: false; failure: HealthCheckFailure; error?: unknown };

/** Runs the checks of one leader and counts consecutive failures. */
export class HealthMonitor {
  private consecutive = 0;

  constructor(
    private readonly ctx: TermContext,
    readonly settings: HealthSettings,
  ) {}

  /** Failed checks in a row so far. */
  get failures(): number {
    return this.consecutive;
  }

  /**
   * Runs one check within `min(timeoutMs, limitMs)`; resolves true if it passed. A failure is
   * counted and reported (`healthCheckFailed`, plus an `error` event for a throw). If `signal`
   * aborts first (the term ended, the campaign stopped), resolves false and counts nothing.
   * Never rejects.
   */
  async check(signal: AbortSignal | undefined, limitMs = Infinity, token?: number): Promise<boolean> {
    if (signal?.aborted) return false;
    const { clock, name, holder } = this.ctx;
    const timeoutMs = Math.max(1, Math.min(this.settings.timeoutMs, limitMs));
    const controller = new AbortController();
    let cancelTimer = () => {};
    let onAbort = () => {};
    const outcome = await new Promise<Outcome>((resolve) => {
      onAbort = () => {
        controller.abort(signal?.reason);
        resolve({ ok: false, failure: 'timeout' });
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      cancelTimer = clock.setTimer(timeoutMs, () => {
        controller.abort(new DOMException(`The health check of lease "${name}" took longer than ${timeoutMs} ms.`, 'TimeoutError'));
        resolve({ ok: false, failure: 'timeout' });
      });
      let result: unknown;
      try {
        result = this.settings.check(controller.signal);
      } catch (error) {
        resolve({ ok: false, failure: 'error', error });
        return;
      }
      // Both handlers are attached even if the time limit already resolved the outcome: a late
      // rejection is then simply ignored instead of becoming an unhandled rejection.
      Promise.resolve(result).then(
        (value) => {
          if (value === true || value === undefined) resolve({ ok: true });
          else if (value === false) resolve({ ok: false, failure: 'false' });
          else resolve({ ok: false, failure: 'error', error: new TypeError(`Expected \`healthCheck\` to resolve to true, false or undefined, got ${describe(value)}.`) });
        },
        (error: unknown) => resolve({ ok: false, failure: 'error', error }),
      );
    });
    cancelTimer();
    signal?.removeEventListener('abort', onAbort);
    if (signal?.aborted) return false;
    if (outcome.ok) {
      this.consecutive = 0;
      return true;
    }
    this.consecutive += 1;
    this.ctx.emit({
      type: 'healthCheckFailed',
      name,
      holder,
      ...(token !== undefined ? { token } : {}),
      failure: outcome.failure,
      consecutive: this.consecutive,
      ...(outcome.failure === 'error' ? { error: outcome.error } : {}),
    });
    if (outcome.failure === 'error') this.ctx.emit({ type: 'error', name, holder, operation: 'healthCheck', error: outcome.error });
    return false;
  }

  /**
   * For a leader, before a renewal: false once `unhealthyAfter` checks in a row have failed. Bound,
   * so a term can call it as its `beforeRenew` with no wrapper made per renewal.
   */
  readonly keepLeading = async (signal: AbortSignal, limitMs: number, token: number): Promise<boolean> => {
    const passed = await this.check(signal, limitMs, token);
    return passed || this.consecutive < this.settings.unhealthyAfter;
  };
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}
