import { describe, expect, it } from 'vitest';
import { LIMITS, LeaseClient, ManualClock, UnavailableError } from 'leasehold';

// The SDK's side of the replay guard: every attempt of an acquire (it carries a requestId) is sent
// within LIMITS.requestIdSpanMaxMs of the first, whatever the retry and timeout settings, so the
// server's guard (twice that, after the grant ends) covers every copy the SDK ever sends.

/** A fetch that never answers (rejects when aborted, as fetch does) and records when each request left. */
function silentEndpoint(clock: ManualClock) {
  const sentAtMs: number[] = [];
  const bodies: Array<Record<string, unknown>> = [];
  const fetch = (_input: string | URL | Request, init: RequestInit = {}) => {
    sentAtMs.push(clock.nowMs());
    if (typeof init.body === 'string') bodies.push(JSON.parse(init.body) as Record<string, unknown>);
    return new Promise<Response>((_, reject) => init.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
  };
  return { fetch: fetch as typeof globalThis.fetch, sentAtMs, bodies };
}

describe('an acquire with retry settings that would outlast the replay guard', () => {
  it('sends its last attempt within requestIdSpanMaxMs of the first, all with one requestId, then gives up', async () => {
    const clock = new ManualClock(0);
    const endpoint = silentEndpoint(clock);
    const client = new LeaseClient({ endpoint: 'https://api.example.com/prod', fetch: endpoint.fetch, clock, random: () => 0.5, timeoutMs: 15_000, retry: { retries: 20, maxDelayMs: 2_000 } });
    const acquired = client.acquire('jobs', { holder: 'me', ttlMs: 15_000 }).catch((e: unknown) => e);
    for (let i = 0; i < 300; i++) await clock.advance(1_000);
    expect(await acquired).toBeInstanceOf(UnavailableError);
    expect(endpoint.sentAtMs.length).toBeGreaterThan(1);
    expect(Math.max(...endpoint.sentAtMs) - (endpoint.sentAtMs[0] as number)).toBeLessThan(LIMITS.requestIdSpanMaxMs);
    expect(new Set(endpoint.bodies.map((b) => b.requestId)).size).toBe(1);
  });

  it('leaves a request without a requestId (a describe) to its own settings', async () => {
    const clock = new ManualClock(0);
    const endpoint = silentEndpoint(clock);
    const client = new LeaseClient({ endpoint: 'https://api.example.com/prod', fetch: endpoint.fetch, clock, random: () => 0.5, timeoutMs: 15_000, retry: { retries: 5, maxDelayMs: 2_000 } });
    const described = client.describe('jobs').catch((e: unknown) => e);
    for (let i = 0; i < 300; i++) await clock.advance(1_000);
    expect(await described).toBeInstanceOf(UnavailableError);
    expect(Math.max(...endpoint.sentAtMs)).toBeGreaterThan(LIMITS.requestIdSpanMaxMs);
  });

  it('with the default settings, sends its last attempt within half the span, leaving the guard three quarters for a copy the network held', async () => {
    const clock = new ManualClock(0);
    const endpoint = silentEndpoint(clock);
    const client = new LeaseClient({ endpoint: 'https://api.example.com/prod', fetch: endpoint.fetch, clock });
    const acquired = client.acquire('jobs', { holder: 'me', ttlMs: 15_000 }).catch((e: unknown) => e);
    for (let i = 0; i < 300; i++) await clock.advance(1_000);
    expect(await acquired).toBeInstanceOf(UnavailableError);
    expect(Math.max(...endpoint.sentAtMs)).toBeLessThanOrEqual(LIMITS.requestIdSpanMaxMs / 2);
    expect(LIMITS.replayGuardMs).toBeGreaterThanOrEqual(2 * LIMITS.requestIdSpanMaxMs);
  });
});
