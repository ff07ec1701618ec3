/**
 * The server's only source of time: a wall clock (epoch milliseconds), because lease times are
 * stored in DynamoDB and compared across hosts. (The SDK measures its deadlines on a
 * `MonotonicClock` instead: client/src/time/clock.ts.) Everything else receives a WallClock, so tests
 * (and the local server's chaos mode) can move time by hand or skew it per handler instance.
 */
export interface WallClock {
  /** Epoch milliseconds. */
  nowMs(): number;
}

export const systemClock: WallClock = { nowMs: () => Date.now() };

/** A clock that reads another clock shifted by a fixed offset: how two Lambda hosts disagree. */
export function offsetClock(base: WallClock, offsetMs: number): WallClock {
  return { nowMs: () => base.nowMs() + offsetMs };
}

/** A clock moved only by hand, for tests. */
export class ManualClock implements WallClock {
  constructor(private current: number) {}
  nowMs(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
