import type { Fence } from './fence.js';
import type { Grant } from '../protocol/index.js';
import { grantDeadlineMs, type TermContext } from '../term/context.js';

/**
 * Claims `grant.token` in `fence` before a term begins, bounded by the grant's local deadline (the
 * same deadline the term would start with, measured from the acquire's send time). Resolves when
 * claimed; rejects with the claim's error, or when the deadline passed first: a claim answered too
 * late is not trusted, just as a grant is not.
 */
export async function claimForTerm(ctx: TermContext, fence: Fence, grant: Grant, sendTimeMs: number, signal?: AbortSignal): Promise<void> {
  const deadlineMs = grantDeadlineMs(ctx, grant, sendTimeMs);
  const timeoutMs = deadlineMs - ctx.clock.nowMs();
  if (timeoutMs <= 0) throw new Error(`Lease "${ctx.name}": the grant's deadline passed before its token ${grant.token} could be claimed.`);
  await fence.claim(grant.token, { timeoutMs, ...(signal ? { signal } : {}) });
  if (ctx.clock.nowMs() >= deadlineMs) throw new Error(`Lease "${ctx.name}": claiming token ${grant.token} outlasted the grant's deadline.`);
}
