/**
 * The SDK's reading of the server's clock, for the deadline a request with a requestId carries
 * (`x-leasehold-deadline`: protocol/deadline.ts): the wall clock here, plus an offset learned when
 * the server refuses a deadline (its REQUEST_EXPIRED answer says the server's time). Until then the
 * offset is 0: hosts that keep their clocks with NTP agree to far less than the deadline's span.
 */
export class ServerClock {
  private offsetMs = 0;

  constructor(private readonly wallMs: () => number) {}

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
}
