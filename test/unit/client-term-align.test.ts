import { ManualClock } from 'leasehold';
import { describe, expect, it } from 'vitest';
import { Term, type TermOwner } from '../../client/src/term/term.js';
import { createTermContext } from '../../client/src/term/context.js';
import { InMemoryLeaseServer } from './client-fakes.js';

// A term's owner may move its renewals onto a shared rhythm (lease groups do, so that a member's
// renewals share one batched request). How far it may move them is the term's to bound.
const TTL_MS = 3_000; // renewEveryMs 990, driftMarginMs 150

async function termWith(alignRenewal: (dueAtMs: number) => number) {
  const clock = new ManualClock();
  const server = new InMemoryLeaseServer(clock);
  const ctx = createTermContext(server, 'jobs', { holder: 'me', ttlMs: TTL_MS, clock });
  const sentAtMs = clock.nowMs();
  const result = await server.acquire('jobs', ctx.request);
  if (!result.acquired) throw new Error('expected a grant');
  const owner: TermOwner = { termEnded: () => undefined, alignRenewal };
  const term = Term.begin(ctx, result.lease, sentAtMs, owner) as Term;
  /** Whether the first renewal leaves exactly `atMs` after the acquire was sent: none a millisecond before, one then. */
  const renewsAt = async (atMs: number) => {
    const renewals = () => server.log.filter((e) => e.op === 'renew').length;
    await clock.advance(atMs - 1 - (clock.nowMs() - sentAtMs));
    const before = renewals();
    await clock.advance(1);
    return before === 0 && renewals() === 1;
  };
  return { term, renewsAt };
}

describe('aligned renewals', () => {
  it('renew at the beat the owner names when it is within half a renewal interval of the due time', async () => {
    const { renewsAt } = await termWith((due) => due - 300);
    expect(await renewsAt(990 - 300)).toBe(true);
  });

  it('are moved at most half a renewal interval early', async () => {
    const { renewsAt } = await termWith((due) => due - 5_000);
    expect(await renewsAt(990 - 495)).toBe(true);
  });

  it('are never moved later than one whole renewal interval before the deadline, so retries keep that long', async () => {
    // Due at 990; half an interval later is 1485; the deadline is 2850, less 990 is 1860: 1485 stands.
    expect(await (await termWith((due) => due + 5_000)).renewsAt(990 + 495)).toBe(true);
    // With a drift margin that leaves less room, the bound is the deadline less one interval.
    const clock = new ManualClock();
    const server = new InMemoryLeaseServer(clock);
    const ctx = createTermContext(server, 'jobs', { holder: 'me', ttlMs: TTL_MS, driftMarginMs: 1_500, clock });
    const result = await server.acquire('jobs', ctx.request);
    if (!result.acquired) throw new Error('expected a grant');
    Term.begin(ctx, result.lease, 0, { termEnded: () => undefined, alignRenewal: (due) => due + 400 });
    await clock.advance(989);
    expect(server.log.filter((e) => e.op === 'renew')).toHaveLength(0);
    await clock.advance(1); // 990: the deadline is 1500, less 990 is 510, which is before the due time: no later than due
    expect(server.log.filter((e) => e.op === 'renew')).toHaveLength(1);
  });
});
