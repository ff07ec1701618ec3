/**
 * The SDK's reading of the server's clock, for the deadline a request with a requestId carries
 * (`x-leasehold-deadline`: protocol/deadline.ts): the wall clock here, plus an offset. Two answers
 * set the offset. Every answer's `Date` header (whole seconds) moves it when the reading falls
 * outside that second by more than DATE_SLACK_MS, so from its first answer on, a client's deadlines
 * are within about two seconds of the server's clock however far its own is off. A REQUEST_EXPIRED
 * answer says the server's time to the millisecond (`serverTime`), and sets it exactly.
 */

/** How far outside an answer's `Date` second the reading may fall (the answer's transit, rounding) before the second wins. */
export const DATE_SLACK_MS = 1_000;

export class ServerClock {
  private offsetMs = 0;

  constructor(private readonly wallMs: () => number) {
    if (typeof wallMs !== 'function' || !Number.isFinite(wallMs())) throw new TypeError('Expected `wallClock` to be a function returning epoch milliseconds.');
  }

  /** The server's time now (epoch ms), as well as this client knows it. */
  nowMs(): number {
    return this.wallMs() + this.offsetMs;
  }

  /**
   * Sets the offset from the server's time in a refusal, read as it arrives (the answer's transit
   * makes the estimate early by a few milliseconds, well within the deadline's span). False when
   * the answer carried no time: then nothing was learned, and the request is not sent again.
   */
  learn(serverTime: number): boolean {
    if (!Number.isFinite(serverTime) || serverTime <= 0) return false;
    this.offsetMs = serverTime - this.wallMs();
    return true;
  }

  /** An answer's `Date` header: the server's clock read within that second, a transit ago. */
  heardDate(header: string | null): void {
    const second = header === null ? Number.NaN : Date.parse(header);
    if (!Number.isFinite(second)) return;
    const reading = this.nowMs();
    if (reading >= second - DATE_SLACK_MS && reading < second + 1_000 + DATE_SLACK_MS) return;
    this.offsetMs = second + 500 - this.wallMs();
  }
}
