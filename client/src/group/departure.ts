import { releaseQuietly } from '../term/context.js';
import type { Term } from '../term/term.js';
import type { GroupCore } from './core.js';
import { handOffAll, type Handoff } from './handoffs.js';
import type { Rebalancer } from './rebalancer.js';

/**
 * A leaving member's partitions: each owned one ends here (`stopped`) and goes to the least loaded
 * other live member, all in batched handoffs; with no other member known, each is released.
 */
export async function handOffEverything(core: GroupCore, rebalancer: Rebalancer): Promise<void> {
  const others = await otherMembers(core, rebalancer);
  const load = new Map(others.map((m) => [m.holder, m.owned]));
  const releases: Promise<void>[] = [];
  const handoffs: Handoff[] = [];
  const { ownerships } = core;
  for (const partition of ownerships.owned()) {
    const to = [...load.entries()].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))[0];
    const term = ownerships.termOf(partition) as Term;
    const ctx = ownerships.contextOf(partition);
    const grant = term.lease;
    term.end('stopped');
    if (to === undefined) {
      releases.push(releaseQuietly(ctx, grant));
    } else {
      load.set(to[0], to[1] + 1);
      handoffs.push({ ctx, grant, to: to[0] });
    }
  }
  releases.push(handOffAll(core, handoffs));
  await Promise.all(releases);
}

/**
 * The other live members and how many partitions each owns: from the last read (at most
 * `balanceEveryMs` old; leaving must not wait for another), those whose membership has not run
 * out since; one fresh read if none is left. A member that died since that read gets handoffs it
 * will not take: their reservations lapse after a ttl and the others take them then.
 */
async function otherMembers(core: GroupCore, rebalancer: Rebalancer): Promise<Array<{ holder: string; owned: number }>> {
  const known = rebalancer.liveMembers(core.settings.memberCtx.clock.nowMs());
  if (known.length > 0) return known;
  const view = await rebalancer.readView();
  return view === undefined ? [] : [...view.known].map(([holder, m]) => ({ holder, owned: m.owned }));
}
