import type { LeaseEvent } from '../protocol/index.js';
import type { WatchSubscription } from '../watch/watch.js';
import type { GroupCore } from './core.js';

/**
 * Push-driven balancing: the group's leases' events on the watch. A handoff to this member is
 * taken at once; a release, a forced revoke, a member joining or leaving prompts a read (a join at
 * once, since a membership is its member's ask for partitions; a leave or a release after
 * `pushedReadDelayMs`, once the burst of handoffs it starts has landed); the watch going live
 * again prompts a read for what it missed. Returns the subscription, or undefined without a watch.
 */
export function followWatch(core: GroupCore): WatchSubscription | undefined {
  const { watch, group, holder, partitionSet, pushedReadDelayMs } = core.settings;
  if (watch === undefined) return undefined;
  const memberPrefix = `${group}.m.`;
  const partitionPrefix = `${group}.p.`;
  try {
    return watch.subscribe(
      { prefixes: [`${group}.`] },
      {
        event: (event: LeaseEvent) => {
          if (event.name.startsWith(partitionPrefix)) {
            const partition = event.name.slice(partitionPrefix.length);
            if (event.type === 'handoff' && event.to === holder && partitionSet.has(partition) && core.isMember()) core.take(partition, true);
            else if (event.type === 'released' || (event.type === 'revoked' && event.revoked?.force === true)) core.requestRead(pushedReadDelayMs);
          } else if (event.name.startsWith(memberPrefix) && event.holder !== holder && (event.type === 'acquired' || event.type === 'released' || event.type === 'handoff')) {
            core.requestRead(event.type === 'acquired' ? 0 : pushedReadDelayMs);
          }
        },
        live: () => core.requestRead(0),
      },
    );
  } catch (error) {
    core.emit({ type: 'watch', name: `${group}.`, holder, live: false, error });
    return undefined;
  }
}
