import { RequestExpiredError, ValidationError } from './errors.js';
import { LIMITS } from './rules.js';

/**
 * A request's deadline: the `x-leasehold-deadline` header, epoch milliseconds on the server's
 * clock. Every route accepts it; a request that arrives after it is refused (409 REQUEST_EXPIRED)
 * before anything is read or written. Why: with several endpoints a copy of a request can arrive
 * long after its sender gave up on it (a partition that heals delivers what it held), and the
 * replay guard remembers only a lease's last LIMITS.replayGuardGrants grants. The deadline is the
 * time bound that does not depend on how busy the lease is: the SDK puts one on every request that
 * carries a requestId (each acquire), LIMITS.requestIdSpanMaxMs after its first send, the same
 * instant after which it sends no attempt of it.
 *
 * A deadline further ahead than LIMITS.deadlineAheadMaxMs is refused the same way (reason
 * `too_far`): it comes from a client clock ahead of the server's, and would let a late copy act for
 * as long as the clocks disagree. Either refusal carries `serverTime`, from which the SDK corrects
 * its clock once and sends the request again (client/src/transport/server-clock.ts); the error is
 * errors.ts's RequestExpiredError.
 */
export const DEADLINE_HEADER = 'x-leasehold-deadline';

/** The rule the header's value must meet, as a ValidationError says it. */
const DEADLINE_RULE = 'must be epoch milliseconds, a whole number of 1 to 16 digits';

/**
 * The one check of the deadline header, where a request enters the server: nothing without it; a
 * malformed value is a VALIDATION_ERROR; a deadline before `nowMs`, or more than
 * LIMITS.deadlineAheadMaxMs after it, is a RequestExpiredError.
 */
export function checkDeadline(header: string | undefined, nowMs: number): void {
  if (header === undefined) return;
  if (!/^[0-9]{1,16}$/.test(header)) throw new ValidationError(DEADLINE_HEADER, DEADLINE_RULE, { received: header });
  const deadline = Number(header);
  if (deadline < nowMs) {
    throw new RequestExpiredError('passed', nowMs, {
      message: `The request arrived ${nowMs - deadline} ms after its deadline (${DEADLINE_HEADER}) by the server's clock, and did nothing: a late copy of a request its sender gave up on, or a client clock behind the server's.`,
    });
  }
  if (deadline - nowMs > LIMITS.deadlineAheadMaxMs) {
    throw new RequestExpiredError('too_far', nowMs, {
      message: `The request's deadline (${DEADLINE_HEADER}) is ${deadline - nowMs} ms ahead of the server's clock, more than ${LIMITS.deadlineAheadMaxMs} ms, and it did nothing: the client's clock is ahead of the server's.`,
    });
  }
}
