import type { LeaseEvent } from '../protocol/index.js';

/**
 * A release, a handoff and a forced revoke reach a watcher by two paths: the route that made the
 * change posts it at once, and the lease table's stream posts what the route did not. The server
 * records whom the route told, so the stream skips them; when the stream reads a change before
 * that record is written (rare), the change comes twice. And a change posted by its route may
 * overtake the stream's earlier changes of the same lease (its `acquired`, a `renewed`).
 *
 * This guard keeps a consumer's view in order, per lease name:
 * - a change already seen is dropped: same name, type, token and instant (`atMs`: a safe and then a
 *   forced revoke share name, type and token, never their instant);
 * - once a grant's end is seen (its `released` or `handoff`, a forced `revoked`), anything older is
 *   dropped: an event of an earlier token, or the `acquired`, `renewed`, `claimed` or `proclaimed`
 *   of that same token, which can only have been written before it ended.
 * It remembers the last `MAX_REMEMBERED` names and changes, which covers the seconds in which the
 * two paths can disagree. A rwlock's events (`resource: 'rwlock'`) are kept apart from the lease of
 * the same name's: `#` is in no lease name.
 */
export const MAX_REMEMBERED = 1_024;

/** The types a route posts directly, so the only ones that can come twice. */
const ENDINGS: ReadonlySet<LeaseEvent['type']> = new Set(['released', 'handoff', 'revoked']);
/** What only a live grant writes: never news after that grant's end. */
const DURING_GRANT: ReadonlySet<LeaseEvent['type']> = new Set(['acquired', 'renewed', 'claimed', 'proclaimed']);

export class WatchEventGuard {
  /** Changes seen, as `name\ntype\ntoken\natMs`, oldest first. */
  private readonly seen = new Set<string>();
  /** Per lease name, the token of the latest grant whose end was seen. */
  private readonly endedToken = new Map<string, number>();

  /** True if `event` is news for consumers; false for a change seen already, or one older than an end seen. */
  accept(event: LeaseEvent): boolean {
    const name = event.resource === 'rwlock' ? `rwlock#${event.name}` : event.name;
    const ended = this.endedToken.get(name);
    if (ended !== undefined && (event.token < ended || (event.token === ended && DURING_GRANT.has(event.type)))) return false;
    if (!ENDINGS.has(event.type)) return true;
    if (event.type === 'revoked' && event.revoked?.force !== true) return true;
    const key = `${name}\n${event.type}\n${event.token}\n${event.atMs}`;
    if (this.seen.has(key)) return false;
    remember(this.seen, key);
    this.endedToken.delete(name);
    this.endedToken.set(name, Math.max(ended ?? event.token, event.token));
    if (this.endedToken.size > MAX_REMEMBERED) this.endedToken.delete(this.endedToken.keys().next().value as string);
    return true;
  }
}

function remember(set: Set<string>, key: string): void {
  set.add(key);
  if (set.size > MAX_REMEMBERED) set.delete(set.values().next().value as string);
}
