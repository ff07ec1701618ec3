import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkHistory, type InvariantId } from '../../chaos/checker/index.js';
import type { OpRecord } from '../../chaos/history.js';
import { GrantsWhileHeldServer, ReleaseIgnoresTokenServer } from './support/broken-lease-servers.js';
import { simulate, simulationConfig } from './support/simulated-history.js';

const SERVER_SIDE: InvariantId[] = ['I1', 'I2', 'I3', 'I6', 'CLOCK'];

function statuses(records: OpRecord[], clockSkewMs: number, ttlMs: number) {
  const summary = checkHistory(records, { clockSkewMs, ttlMs, maxStates: 200_000 });
  return Object.fromEntries(SERVER_SIDE.map((id) => [id, summary.invariants[id].status]));
}

describe('checker properties', () => {
  it('a history a correct server produced, with concurrency, lost answers and clock skew within the bound, passes I1, I2, I3, I6 and CLOCK', () => {
    fc.assert(
      fc.property(simulationConfig, (config) => {
        const records = simulate(config);
        expect(statuses(records, config.clockSkewMs, config.ttlMs)).toEqual({ I1: 'pass', I2: 'pass', I3: 'pass', I6: 'pass', CLOCK: 'pass' });
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
