import type { Term, TermOwner } from '../term/term.js';
import type { Ownerships } from './ownership.js';
import type { GroupSettings } from './settings.js';
import type { GroupEvent } from './types.js';

/**
 * What the group's parts (membership, taker, rebalancer, departure, the watch) see of the member
 * that wires them (`LeaseGroupImpl`): its settings, what it owns, its lifecycle and its callbacks.
 * The parts talk to each other only through it.
 */
export interface GroupCore extends TermOwner {
  readonly settings: GroupSettings;
  readonly ownerships: Ownerships;
  /** Started and not stopped. */
  isRunning(): boolean;
  isStopped(): boolean;
  isMember(): boolean;
  /** Reads the group within `delayMs` (sooner if one is already due sooner). */
  requestRead(delayMs: number): void;
  /** Queues an acquire of `partition`; `urgent` ones go first. */
  take(partition: string, urgent?: boolean): void;
  /** A partition's term began here. */
  adopt(partition: string, term: Term): void;
  emit(event: GroupEvent): void;
  /** Keeps background work to be awaited by `stop()`. */
  track(work: Promise<unknown>): void;
  /** Stops the member for good (`LeaseGroup.stop()`). */
  stop(): Promise<void>;
  /** Runs a user hook; a throw or a rejection becomes a `groupError` event. */
  callHook(operation: 'onAssigned' | 'onRevoked', hook: () => void | Promise<void> | undefined): void;
}
