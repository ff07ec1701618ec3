/**
 * The server's only source of time. Everything else receives a Clock, so tests (and the local
 * server's chaos mode) can move time by hand or skew it per handler instance.
 */
export interface Clock {
  /** Epoch milliseconds. */
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock that reads another clock shifted by a fixed offset: how two Lambda hosts disagree. */
export function offsetClock(base: Clock, offsetMs: number): Clock {
  return { nowMs: () => base.nowMs() + offsetMs };
}

/** A clock moved only by hand, for tests. */
export class ManualClock implements Clock {
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
