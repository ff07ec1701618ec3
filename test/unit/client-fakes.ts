import type { AcquireResult, CallOptions, Grant, GrantRef, LeaseApi, PublicLease, RenewRequest } from 'leasehold';

/**
 * A fake of the three verbs the leader uses. Every call waits until the test answers it, so a test
 * states exactly what the server said and when.
 */
export type Operation = 'acquire' | 'renew' | 'release';

export interface PendingCall {
  op: Operation;
  name: string;
  request: Record<string, unknown>;
  call: CallOptions | undefined;
  /** Monotonic time at which the call was made. */
  atMs: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  settled: boolean;
}

export class FakeLeaseApi implements LeaseApi {
  readonly calls: PendingCall[] = [];

  constructor(private readonly nowMs: () => number) {}

  acquire(name: string, request: object, call?: CallOptions): Promise<AcquireResult> {
    return this.record('acquire', name, request, call) as Promise<AcquireResult>;
  }

  renew(name: string, request: RenewRequest, call?: CallOptions): Promise<Grant> {
    return this.record('renew', name, request, call) as Promise<Grant>;
  }

  release(name: string, grant: GrantRef, call?: CallOptions): Promise<PublicLease> {
    return this.record('release', name, grant, call) as Promise<PublicLease>;
  }

  /** Calls of one kind, answered or not. */
  all(op: Operation): PendingCall[] {
    return this.calls.filter((c) => c.op === op);
  }

  /** The oldest unanswered call; fails the test if there is none or it is of another kind. */
  next(op: Operation): PendingCall {
    const pending = this.calls.find((c) => !c.settled);
    if (pending === undefined) throw new Error(`expected a pending ${op} call, found none`);
    if (pending.op !== op) throw new Error(`expected a pending ${op} call, found ${pending.op}`);
    return pending;
  }

  pending(): PendingCall[] {
    return this.calls.filter((c) => !c.settled);
  }

  private record(op: Operation, name: string, request: object, call: CallOptions | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const entry: PendingCall = {
        op,
        name,
        request: { ...request },
        call,
        atMs: this.nowMs(),
        settled: false,
        resolve: (value) => {
          if (entry.settled) return;
          entry.settled = true;
          resolve(value);
        },
        reject: (error) => {
          if (entry.settled) return;
          entry.settled = true;
          reject(error);
        },
      };
      call?.signal?.addEventListener('abort', () => entry.reject(call.signal?.reason), { once: true });
      this.calls.push(entry);
    });
  }
}

export function publicLease(overrides: Partial<PublicLease> = {}): PublicLease {
  return {
    name: 'jobs',
    holder: 'other',
    token: 7,
    ttlMs: 15_000,
    expiresAt: 1_000_015_000,
    remainingMs: 15_000,
    acquiredAt: 1_000_000_000,
    renewedAt: 1_000_000_000,
    transitions: 1,
    metadata: null,
    ...overrides,
  };
}

export function grant(overrides: Partial<Grant> = {}): Grant {
  return { ...publicLease({ holder: 'me' }), leaseId: '0123456789abcdef0123456789abcdef', holder: 'me', ...overrides };
}
