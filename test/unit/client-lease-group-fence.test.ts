import { FencedOutError, createLeaseGroup, type Fence, type FenceClaimOptions, type ManualClock } from 'leasehold';
import { describe, expect, it } from 'vitest';
import { GroupWorld, MemberLink } from './group-world.js';

const TTL_MS = 2_000;

/**
 * One epoch per partition in memory, on the world's clock: a claim raises it (equal is success),
 * answered after `claimDelayMs`; `refuseNext` partitions have a newer epoch put there first.
 */
class EpochBook {
  readonly epochs = new Map<string, number>();
  readonly claims: Array<{ partition: string; token: number; atMs: number; ok: boolean }> = [];
  claimDelayMs = 0;
  inFlight = 0;
  maxInFlight = 0;
  built: string[] = [];

  constructor(private readonly clock: ManualClock) {}

  fence = (partition: string): Fence & { partition: string } => {
    this.built.push(partition);
    const book = this;
    return {
      partition,
      claim(token: number, _options?: FenceClaimOptions): Promise<void> {
        book.inFlight += 1;
        book.maxInFlight = Math.max(book.maxInFlight, book.inFlight);
        return new Promise<void>((resolve, reject) => {
          book.clock.setTimer(book.claimDelayMs, () => {
            book.inFlight -= 1;
            const epoch = book.epochs.get(partition) ?? 0;
            const ok = epoch <= token;
            book.claims.push({ partition, token, atMs: book.clock.nowMs(), ok });
            if (!ok) return reject(new FencedOutError(token, epoch));
            book.epochs.set(partition, token);
            resolve();
          });
        });
      },
    };
  };
}

function fencedWorld(partitions: number) {
  const world = new GroupWorld('orders', partitions);
  const book = new EpochBook(world.clock);
  const fenced: Array<{ partition: string; token: number; fence: unknown; owner: boolean }> = [];
  const add = (name: string) => {
    let member: ReturnType<GroupWorld['add']> | undefined;
    member = world.add(name, {
      fence: book.fence,
      onAssigned: (partition, term) => {
        fenced.push({ partition, token: term.token, fence: term.fence, owner: member?.group.isOwner(partition) === true });
        member?.assigned.push({ partition, token: term.token, atMs: world.clock.nowMs() });
      },
    });
    return member;
  };
  return { world, book, fenced, add };
}

describe('a lease group fenced by an epoch per partition', () => {
  it('claims each won token in its own partition\'s epoch before the ownership begins, and hands onAssigned that partition\'s fence', async () => {
    const { world, book, fenced, add } = fencedWorld(4);
    book.claimDelayMs = 300;
    const a = add('w1');
    expect(book.built).toEqual(['0', '1', '2', '3']);
    a.group.start();
    await world.run(250, 5);
    // Granted, not yet claimed: nothing is owned and onAssigned has not run.
    expect(world.server.log.filter((e) => e.op === 'acquire' && e.name.startsWith('orders.p.')).length).toBeGreaterThan(0);
    expect(a.group.owned()).toEqual([]);
    expect(a.group.token('0')).toBeUndefined();
    expect(a.group.signal('0').aborted).toBe(true);
    expect(fenced).toEqual([]);
    await world.run(TTL_MS, 5);
    expect(a.group.owned()).toEqual(['0', '1', '2', '3']);
    for (const f of fenced) {
      expect(f.owner).toBe(true);
      expect((f.fence as { partition: string }).partition).toBe(f.partition);
      expect(book.epochs.get(f.partition)).toBe(f.token);
      expect(a.group.token(f.partition)).toBe(f.token);
    }
  });

  it('releases a partition whose claim is refused (a newer epoch is there), reports it, and owns it once a later claim succeeds', async () => {
    const { world, book, add } = fencedWorld(2);
    book.epochs.set('1', 1_000);
    const a = add('w1');
    a.group.start();
    await world.run(TTL_MS / 2, 5);
    expect(a.group.owned()).toEqual(['0']);
    expect(a.events.filter((e) => e.type === 'error' && e.operation === 'fence' && e.name === 'orders.p.1').length).toBeGreaterThan(0);
    // Released at once, not left to expire.
    expect(world.server.log.filter((e) => e.op === 'release' && e.name === 'orders.p.1').length).toBeGreaterThan(0);
    expect((await world.server.describeGroup('orders')).group.leases.find((l) => l.name === 'orders.p.1')?.holder ?? null).toBeNull();
    book.epochs.delete('1');
    await world.run(2 * TTL_MS, 5);
    expect(a.group.owned()).toEqual(['0', '1']);
    expect(world.overlaps).toEqual([]);
  });

  it('does not trust a claim answered after the grant\'s local deadline: the partition is released, never owned', async () => {
    const { world, book, fenced, add } = fencedWorld(1);
    book.claimDelayMs = TTL_MS;
    const a = add('w1');
    a.group.start();
    await world.run(TTL_MS + 200, 5);
    expect(fenced).toEqual([]);
    expect(a.group.owned()).toEqual([]);
    expect(a.events.some((e) => e.type === 'error' && e.operation === 'fence')).toBe(true);
    expect(world.server.log.filter((e) => e.op === 'release' && e.name === 'orders.p.0').length).toBeGreaterThan(0);
  });

  it('claims a joining member\'s partitions concurrently, at most 8 at once with its acquires', async () => {
    const { world, book, add } = fencedWorld(24);
    book.claimDelayMs = 50;
    const a = add('w1');
    a.group.start();
    await world.run(2 * TTL_MS, 5);
    expect(a.group.owned()).toHaveLength(24);
    expect(book.maxInFlight).toBe(8);
  });

  it('a handoff\'s receiver claims each partition it receives: the epochs move to its tokens and the leaver\'s are fenced out', async () => {
    const { world, book, add } = fencedWorld(6);
    const [a, b] = [add('w1'), add('w2')];
    a.group.start();
    await world.run(TTL_MS, 5);
    b.group.start();
    await world.run(2 * TTL_MS, 5);
    const stopped = a.group.stop();
    await world.run(TTL_MS, 5);
    await stopped;
    expect(b.group.owned()).toHaveLength(6);
    for (const p of b.group.owned()) expect(book.epochs.get(p)).toBe(b.group.token(p));
    // Exactly one claim per grant: a member never claims a token twice.
    const byToken = new Set(book.claims.map((c) => `${c.partition}@${c.token}`));
    expect(byToken.size).toBe(book.claims.length);
    expect(world.overlaps).toEqual([]);
  });

  it('refuses a fence option that is not a function, or a partition whose fence has no claim, before anything is sent', () => {
    const world = new GroupWorld('orders', 2);
    const link = new MemberLink(world.server, world.clock);
    const base = { group: 'orders', partitions: 2, holder: 'w1', clock: world.clock };
    expect(() => createLeaseGroup(link, { ...base, fence: {} as never })).toThrow(/Expected `fence` to be a function/);
    expect(() => createLeaseGroup(link, { ...base, fence: (p) => (p === '1' ? ({} as Fence) : { claim: async () => undefined }) })).toThrow(/fence\("1"\)/);
    expect(world.server.log).toEqual([]);
  });
});
