/**
 * Epoch fencing per partition (the group's `fence` option). Per-item fencing stops a deposed owner
 * only on the items its successor has already written; an epoch fences the partition's whole store
 * at once. Each partition has its own epoch (its own record or row, keyed by the partition's lease
 * name, `<group>.p.<partition>`), so one partition's new owner fences nothing of the others.
 *
 * A partition's ownership begins only once the grant's token is claimed in that partition's epoch,
 * within the grant's local deadline (`claimForTerm`, exactly a Leader's rule): until then `isOwner`
 * is false, `token` undefined, and `onAssigned` has not run. A claim that fails (a newer epoch is
 * there, or no answer in time) releases the partition's lease; a later read of the group plans it
 * again, for this member or another. The claim runs inside the taker's acquire, so claims share the
 * taker's bound on acquires in flight: a joining member claims up to that many partitions at once,
 * and a handoff's receiver pays one more conditional write per partition, after its acquire.
 */
import { claimForTerm } from '../fence/claim.js';
import { validateFence, type Fence } from '../fence/fence.js';
import type { Grant } from '../protocol/index.js';
import { releaseQuietly, type TermContext } from '../term/context.js';
import type { GroupCore } from './core.js';

/** The `fence` option: each partition's epoch store, built once per partition when the member is created. */
export type PartitionFenceOption<F extends Fence | undefined = Fence | undefined> = (partition: string) => F;

/** Every partition's fence, built and checked once at construction. */
export class PartitionFences {
  private constructor(private readonly fences: ReadonlyMap<string, Fence>) {}

  /** Undefined when the group has no `fence`; throws a TypeError at once when the option or a fence it returns is malformed. */
  static from(option: unknown, partitions: readonly string[]): PartitionFences | undefined {
    if (option === undefined) return undefined;
    if (typeof option !== 'function') {
      throw new TypeError('Expected `fence` to be a function (partition) => fence, such as (partition) => postgresEpoch(pool, { name: partitionLeaseName(group, partition) }).');
    }
    const fences = new Map<string, Fence>();
    for (const partition of partitions) {
      let fence: Fence | undefined;
      try {
        fence = validateFence((option as PartitionFenceOption)(partition));
      } catch (error) {
        throw new TypeError(`Expected \`fence("${partition}")\` to return an object with a claim(token) method, such as dynamodbEpoch(...) or postgresEpoch(...).`, { cause: error });
      }
      if (fence === undefined) throw new TypeError(`Expected \`fence("${partition}")\` to return a fence, got undefined.`);
      fences.set(partition, fence);
    }
    return new PartitionFences(fences);
  }

  /** The partition's fence (every partition of the group has one). */
  of(partition: string): Fence {
    return this.fences.get(partition) as Fence;
  }

  /**
   * Claims the grant's token in the partition's epoch within the grant's deadline. On failure
   * reports it (an `error` event, operation `fence`), releases the grant, and returns false.
   */
  async claim(core: GroupCore, ctx: TermContext, partition: string, grant: Grant, sendTimeMs: number): Promise<boolean> {
    try {
      await claimForTerm(ctx, this.of(partition), grant, sendTimeMs);
      return true;
    } catch (error) {
      core.emit({ type: 'error', name: ctx.name, holder: core.settings.holder, operation: 'fence', token: grant.token, error });
      await releaseQuietly(ctx, grant);
      return false;
    }
  }
}
