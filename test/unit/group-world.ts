import {
  ManualClock,
  UnavailableError,
  createLeaseGroup,
  createWatch,
  type AcquireRequest,
  type BatchHandoffEntry,
  type BatchRenewEntry,
  type CallOptions,
  type GrantRef,
  type GroupEvent,
  type HandoffRequest,
  type LeaseGroup,
  type LeaseGroupApi,
  type LeaseGroupOptions,
  type LossReason,
  type RenewRequest,
} from 'leasehold';
import { FakeWatchServer, InMemoryLeaseServer } from './client-fakes.js';

/**
 * A lease group on a manual clock: one in-memory lease server, members joining, leaving, crashing
 * and cut off, and a check after every step that no two members believe they own one partition.
 */

/** One member's way to the server; cut off, every request fails as a network error would. */
export class MemberLink implements LeaseGroupApi {
  cut = false;
  /** Answers arrive this long after the server acted (on the world's clock). */
  answerDelayMs = 0;
  /** Requests reach the server this long after they were sent (a queue on the way). */
  requestDelayMs = 0;
  /** Requests sent and not yet answered, and the most there ever were, by operation. */
  readonly inFlight = new Map<string, number>();
  readonly maxInFlight = new Map<string, number>();
  constructor(
    private readonly server: InMemoryLeaseServer,
    private readonly clock: ManualClock,
  ) {}

  private through<T>(call: () => Promise<T>, op = 'other'): Promise<T> {
    if (this.cut) return Promise.reject(new UnavailableError('cut off: ECONNREFUSED'));
    const now = (this.inFlight.get(op) ?? 0) + 1;
    this.inFlight.set(op, now);
    this.maxInFlight.set(op, Math.max(now, this.maxInFlight.get(op) ?? 0));
    const answered = () => this.inFlight.set(op, (this.inFlight.get(op) ?? 1) - 1);
    const requestDelayMs = this.requestDelayMs;
    const result = requestDelayMs === 0 ? call() : new Promise<T>((resolve, reject) => this.clock.setTimer(requestDelayMs, () => call().then(resolve, reject)));
    if (this.answerDelayMs === 0) return result.finally(answered);
    const delayMs = this.answerDelayMs;
    return new Promise<T>((resolve, reject) => {
      result.then(
        (value) =>
          this.clock.setTimer(delayMs, () => {
            answered();
            resolve(value);
          }),
        (error: unknown) =>
          this.clock.setTimer(delayMs, () => {
            answered();
            reject(error);
          }),
      );
    });
  }

  acquire(name: string, request: AcquireRequest) {
    return this.through(() => this.server.acquire(name, request), 'acquire');
  }
  renew(name: string, request: RenewRequest) {
    return this.through(() => this.server.renew(name, request));
  }
  release(name: string, grant: GrantRef) {
    return this.through(() => this.server.release(name, grant));
  }
  handoff(name: string, request: HandoffRequest) {
    return this.through(() => this.server.handoff(name, request));
  }
  describeGroup(group: string, _request?: unknown, _call?: CallOptions) {
    return this.through(() => this.server.describeGroup(group));
  }
  renewBatch(prefix: string, grants: readonly BatchRenewEntry[]) {
    return this.through(() => this.server.renewBatch(prefix, grants));
  }
  handoffBatch(prefix: string, handoffs: readonly BatchHandoffEntry[]) {
    return this.through(() => this.server.handoffBatch(prefix, handoffs));
  }
}

export interface WorldMember {
  name: string;
  group: LeaseGroup;
  link: MemberLink;
  events: GroupEvent[];
  revoked: Array<{ partition: string; reason: LossReason; atMs: number }>;
  assigned: Array<{ partition: string; token: number; atMs: number }>;
}

export class GroupWorld {
  readonly clock = new ManualClock();
  readonly watch: FakeWatchServer | undefined;
  readonly server: InMemoryLeaseServer;
  readonly members: WorldMember[] = [];
  /** Every instant a check found two members believing they own one partition. */
  readonly overlaps: Array<{ partition: string; holders: string[]; atMs: number }> = [];

  constructor(
    readonly groupName: string,
    readonly partitions: number | string[],
    readonly options: Partial<LeaseGroupOptions> & { withWatch?: boolean } = {},
  ) {
    this.watch = options.withWatch ? new FakeWatchServer() : undefined;
    this.server = new InMemoryLeaseServer(this.clock, this.watch, 0);
  }

  add(name: string, extra: Partial<LeaseGroupOptions> = {}): WorldMember {
    const link = new MemberLink(this.server, this.clock);
    const member: WorldMember = { name, link, events: [], revoked: [], assigned: [], group: undefined as unknown as LeaseGroup };
    const { withWatch: _w, ...options } = this.options;
    member.group = createLeaseGroup(link, {
      group: this.groupName,
      partitions: this.partitions,
      holder: name,
      ttlMs: 2_000,
      clock: this.clock,
      random: () => 0.5,
      ...(this.watch === undefined ? {} : { watch: createWatch({ url: 'ws://fake/v1/watch', webSocket: this.watch.factory, clock: this.clock }) }),
      onEvent: (event) => member.events.push(event),
      onAssigned: (partition, term) => void member.assigned.push({ partition, token: term.token, atMs: this.clock.nowMs() }),
      onRevoked: (partition, reason) => void member.revoked.push({ partition, reason, atMs: this.clock.nowMs() }),
      ...options,
      ...extra,
    });
    this.members.push(member);
    return member;
  }

  /** Advances in steps of `stepMs`, checking after each that no partition has two believing owners. */
  async run(ms: number, stepMs = 20): Promise<void> {
    for (let t = 0; t < ms; t += stepMs) {
      await this.clock.advance(Math.min(stepMs, ms - t));
      this.checkOwners();
    }
  }

  checkOwners(): void {
    const all = typeof this.partitions === 'number' ? Array.from({ length: this.partitions }, (_, i) => String(i)) : this.partitions;
    for (const partition of all) {
      const holders = this.members.filter((m) => m.group.isOwner(partition)).map((m) => m.name);
      if (holders.length > 1) this.overlaps.push({ partition, holders, atMs: this.clock.nowMs() });
    }
  }

  /** Owned partitions per member still running (not stopped, not cut off). */
  counts(members = this.members): number[] {
    return members.map((m) => m.group.owned().length);
  }
}
