import { ErrorCode, LIMITS, errorFromBody, isLeaseLostError, type BatchHandoffResult, type Grant } from '../protocol/index.js';
import { releaseQuietly, type TermContext } from '../term/context.js';
import { handoffWindowMs } from '../time/timing.js';
import type { GroupCore } from './core.js';
import { partitionLeaseName } from './names.js';

/** One partition to hand over: its context, the grant whose term has already ended here, and the receiver. */
export interface Handoff {
  ctx: TermContext;
  grant: Grant;
  to: string;
}

/**
 * Reserves a lease for its receiver. Refused as lost is fine (the lease had moved on); any other
 * failure releases it plainly, so nobody waits for its expiry.
 */
export async function handOff(core: GroupCore, { ctx, grant, to }: Handoff): Promise<void> {
  try {
    await core.settings.api.handoff(ctx.name, { leaseId: grant.leaseId, token: grant.token, to, windowMs: handoffWindowMs(ctx.timing.ttlMs) }, { timeoutMs: ctx.timing.requestTimeoutMs });
  } catch (error) {
    if (isLeaseLostError(error)) return;
    core.emit({ type: 'error', name: ctx.name, holder: core.settings.holder, operation: 'handoff', error });
    await releaseQuietly(ctx, grant);
  }
}

/**
 * A stopping member's handoffs: in batched requests of up to 100 when the client can send them, one
 * request each otherwise. One request gets there sooner than many that each need a connection and a
 * turn of the server. Each entry is settled as `handOff` settles it.
 */
export async function handOffAll(core: GroupCore, handoffs: readonly Handoff[]): Promise<void> {
  const { api, group, holder } = core.settings;
  const batch = api.handoffBatch;
  if (batch === undefined || handoffs.length < 2) {
    await Promise.all(handoffs.map((h) => handOff(core, h)));
    return;
  }
  const prefix = partitionLeaseName(group, '');
  const chunks: Array<readonly Handoff[]> = [];
  for (let i = 0; i < handoffs.length; i += LIMITS.batchMaxGrants) chunks.push(handoffs.slice(i, i + LIMITS.batchMaxGrants));
  await Promise.all(
    chunks.map(async (chunk) => {
      const timeoutMs = (chunk[0] as Handoff).ctx.timing.requestTimeoutMs;
      let results: BatchHandoffResult[];
      try {
        results = await batch.call(
          api,
          prefix,
          chunk.map(({ ctx, grant, to }) => ({ name: ctx.name, leaseId: grant.leaseId, token: grant.token, to, windowMs: handoffWindowMs(ctx.timing.ttlMs) })),
          { timeoutMs },
        );
      } catch (error) {
        core.emit({ type: 'error', name: prefix, holder, operation: 'handoff', error });
        await Promise.all(chunk.map(({ ctx, grant }) => releaseQuietly(ctx, grant)));
        return;
      }
      await Promise.all(
        chunk.map(async ({ ctx, grant }, i) => {
          const result = results[i];
          if (result === undefined || !('error' in result)) return;
          if (result.error.code === ErrorCode.LEASE_LOST) return;
          core.emit({ type: 'error', name: ctx.name, holder, operation: 'handoff', error: errorFromBody(result.error, ctx.name) });
          await releaseQuietly(ctx, grant);
        }),
      );
    }),
  );
}
