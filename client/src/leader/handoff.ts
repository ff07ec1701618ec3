import { isLeaseLostError, validateHandoffRequest, type Grant, type HandoffResponse } from '../protocol/index.js';
import { releaseQuietly, type TermContext } from '../term/context.js';
import type { Term } from '../term/term.js';
import { handoffWindowMs, type Timing } from '../time/timing.js';

/**
 * Handing a Leader's lease to a named holder: on a deploy (`Leader.handoff`) and when yielding to a
 * claimant (`yield.ts`). A handoff that fails becomes a plain release, so nobody waits for the expiry.
 */

/** The reservation a yield gives its claimant (`handoffWindowMs` in timing.ts). */
export function claimantWindowMs(timing: Timing): number {
  return handoffWindowMs(timing.ttlMs);
}

/** A handoff of an ended term's grant; if it fails, a plain release so nobody waits for the expiry. */
export async function handOffQuietly(ctx: TermContext, grant: Grant, to: string, windowMs: number): Promise<void> {
  const send = ctx.client.handoff;
  try {
    if (typeof send !== 'function') throw new TypeError('Expected the client to have a `handoff` method (LeaseClient has one).');
    await send.call(ctx.client, ctx.name, { leaseId: grant.leaseId, token: grant.token, to, windowMs }, { timeoutMs: ctx.timing.requestTimeoutMs });
  } catch (error) {
    if (isLeaseLostError(error)) return;
    ctx.emit({ type: 'error', name: ctx.name, holder: ctx.holder, operation: 'handoff', error });
    await releaseQuietly(ctx, grant);
  }
}

/**
 * `Leader.handoff`: checks the request while `term` still leads (a bad target must not cost the
 * lease), then `stepOff` ends the term and gives its grant up through the handoff. Resolves with the
 * server's answer; rethrows the handoff's error after a plain release.
 */
export async function handOffTerm(
  ctx: TermContext,
  term: Term | undefined,
  to: string,
  options: { windowMs?: number },
  stepOff: (giveUp: (grant: Grant) => Promise<void>) => Promise<void>,
): Promise<HandoffResponse> {
  const { client, name } = ctx;
  const send = client.handoff;
  if (typeof send !== 'function') {
    throw new TypeError('Expected the client to have a `handoff` method (LeaseClient has one).');
  }
  if (term === undefined || !term.isValid()) throw new Error(`Cannot hand off lease "${name}": this process is not leading it.`);
  const request = validateHandoffRequest({
    leaseId: term.lease.leaseId,
    token: term.token,
    to,
    ...(options.windowMs !== undefined ? { windowMs: options.windowMs } : {}),
  });
  let outcome: { response: HandoffResponse } | { error: unknown } | undefined;
  await stepOff(async (grant) => {
    try {
      const response = await send.call(client, name, { ...request, leaseId: grant.leaseId, token: grant.token }, { timeoutMs: ctx.timing.requestTimeoutMs });
      outcome = { response };
    } catch (error) {
      outcome = { error };
      // Not handed off (or its answer was lost): release plainly so nobody waits for the expiry.
      // After a handoff that did happen, this release is a harmless repeat.
      if (!isLeaseLostError(error)) await releaseQuietly(ctx, grant);
    }
  });
  if (outcome === undefined) throw new Error(`Cannot hand off lease "${name}": the term ended before the handoff.`);
  if ('error' in outcome) throw outcome.error;
  return outcome.response;
}
