import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkHistory, type InvariantId } from '../../chaos/checker/index.js';
import type { OpRecord } from '../../chaos/history.js';
import { GrantsWhileHeldServer, LateRenewMovesExpiryBackServer, ReleaseIgnoresTokenServer } from './support/broken-lease-servers.js';
import { ReferenceLeaseServer } from './support/reference-lease-server.js';
import type { FinalJobRow } from '../../chaos/checker/final-jobs.js';
import {
  simulate,
  simulateWithJobs,
  simulationConfig,
  simulationConfigWithRevokes,
  type SimStep,
  type SimulationConfig,
} from './support/simulated-history.js';

const ALL: InvariantId[] = ['I1', 'I2', 'I3', 'I4', 'I5', 'I6', 'CLOCK'];

function statuses(records: OpRecord[], finalJobs: FinalJobRow[], clockSkewMs: number, ttlMs: number) {
  const summary = checkHistory(records, { clockSkewMs, ttlMs, maxStates: 200_000, finalJobs });
  return Object.fromEntries(ALL.map((id) => [id, summary.invariants[id].status]));
}

describe('checker properties', () => {
  it.each([
    ['with concurrency, lost answers and clock skew within the bound', simulationConfig],
    ['and an operator revoking the lease now and then, safe or forced (the holders learning of it only from their renews)', simulationConfigWithRevokes],
  ])('a history a correct server and fail-closed writers produced, %s, passes every invariant', (_label, configs) => {
    fc.assert(
      fc.property(configs, (config) => {
        const { records, finalJobs } = simulateWithJobs(config);
        expect(statuses(records, finalJobs, config.clockSkewMs, config.ttlMs)).toEqual({
          I1: 'pass',
          I2: 'pass',
          I3: 'pass',
          I4: 'pass',
          I5: 'pass',
          I6: 'pass',
          CLOCK: 'pass',
        });
      }),
      { numRuns: 300 },
    );
  });

  it('a token of an ok acquire changed to a token another grant already had is always caught by I2', () => {
    fc.assert(
      fc.property(simulationConfig, fc.nat(), fc.nat(), (config, pickVictim, pickDonor) => {
        const records = simulate(config);
        const grants = records.filter((r) => r.op === 'acquire' && r.outcome === 'ok');
        // The donor must be a different grant (not the same-requestId retry of the victim's grant).
        const pairs = grants.flatMap((victim) =>
          grants
            .filter((donor) => donor.token !== victim.token && (donor.holder !== victim.holder || donor.requestId !== victim.requestId))
            .map((donor) => [victim, donor] as const),
        );
        fc.pre(pairs.length > 0);
        const [victim, donor] = pairs[(pickVictim + pickDonor) % pairs.length]!;
        const mutated = records.map((r) => (r === victim ? { ...r, token: donor.token } : r));

        const summary = checkHistory(mutated, { clockSkewMs: config.clockSkewMs, ttlMs: config.ttlMs, maxStates: 200_000 });
        expect(summary.invariants.I2.status).toBe('fail');
        expect(summary.ok).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  /**
   * A bug that fired can still be invisible: inside the clock-skew and concurrency uncertainty a
   * double grant looks like an expiry. So this is a rate over a fixed sample, and a floor well
   * below what the checker reaches today (about 99% and 91%): it fails if the model is loosened
   * until it stops catching real bugs.
   */
  it.each([
    ['grants while the lease is held', () => new GrantsWhileHeldServer(), 0.9],
    ['releases the successor with a stale token', () => new ReleaseIgnoresTokenServer(), 0.8],
  ] as const)('catches a server that %s in most generated histories where it did', (_, makeServer, floor) => {
    let misbehaved = 0;
    let caught = 0;
    for (const config of fc.sample(simulationConfig, { numRuns: 300, seed: 42 })) {
      const server = makeServer();
      const records = simulate(config, server);
      if (!server.misbehaved) continue;
      misbehaved += 1;
      if (!checkHistory(records, { clockSkewMs: config.clockSkewMs, ttlMs: config.ttlMs }).ok) caught += 1;
    }
    expect(misbehaved).toBeGreaterThan(100);
    expect(caught / misbehaved).toBeGreaterThanOrEqual(floor);
  });
});

/**
 * The finding that led to the `renewedAt <= :now` guard in functions/lease-store.ts, replayed: w0
 * renews at t, then a renew of its that read the server clock 119 ms earlier lands; w1 acquires
 * 902 ms after t (ttl 1000), and w0 writes, relying on its deadline t + 1000.
 */
describe('a renew applied late with an earlier clock', () => {
  const step = (s: Partial<SimStep> & Pick<SimStep, 'actor' | 'action'>): SimStep => ({
    gapMs: 0,
    job: 0,
    beforeMs: 0,
    afterMs: 0,
    readAt: 0,
    offset: 0,
    answer: 'ok',
    reported: true,
    gaveUp: false,
    ...s,
  });
  const config: SimulationConfig = {
    ttlMs: 1_000,
    lockDelayMs: 0,
    clockSkewMs: 0,
    steps: [
      step({ actor: 0, action: 'acquire' }),
      step({ actor: 0, action: 'renew', gapMs: 500 }),
      step({ actor: 0, action: 'renew', beforeMs: 120 }),
      step({ actor: 1, action: 'acquire', gapMs: 900 }),
      step({ actor: 0, action: 'write' }),
    ],
  };

  it('is caught by I4 when the server lets it move expiresAt back (the lease store before its fix)', () => {
    const server = new LateRenewMovesExpiryBackServer();
    const { records, finalJobs } = simulateWithJobs(config, server);
    expect(server.misbehaved).toBe(true);
    const summary = checkHistory(records, { clockSkewMs: 0, ttlMs: 1_000, finalJobs });
    expect(summary.invariants.I4.status).toBe('fail');
    expect(summary.invariants.I4.violations[0]!.message).toMatch(/relied on token \d+ until .* but w1 was granted token/);
  });

  it('passes every invariant when the server answers it with the newer grant instead (the lease store now)', () => {
    const { records, finalJobs } = simulateWithJobs(config, new ReferenceLeaseServer());
    expect(statuses(records, finalJobs, 0, 1_000)).toEqual({ I1: 'pass', I2: 'pass', I3: 'pass', I4: 'pass', I5: 'pass', I6: 'pass', CLOCK: 'pass' });
  });
});
