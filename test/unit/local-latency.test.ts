import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  API_GATEWAY_LAMBDA_WARM,
  AWS_PROFILE_DELAYS,
  ESM_BATCHING_WINDOW_MS,
  ESM_POLL_INTERVAL_MS,
  ESM_POLLS_PER_SECOND,
  LAMBDA_COLD_START_RATE,
  createAwsProfile,
} from '../../local/latency/aws-profile.js';
import { HANDOVER_PROVISIONED_CONCURRENCY } from '../../infra/provisioned-concurrency.js';
import { createLatencyHooks, type LatencyHop } from '../../local/latency/hooks.js';
import { sample, seededStream, type Distribution } from '../../local/latency/sampler.js';
import { readStartOptions, validateLocalServerOptions } from '../../local/server-options.js';

const PROFILE_SOURCE = readFileSync(new URL('../../local/latency/aws-profile.ts', import.meta.url), 'utf8');

/** The doc comment right above `export const NAME`. */
function commentAbove(name: string): string {
  const at = PROFILE_SOURCE.search(new RegExp(`export const ${name}\\b`));
  expect(at, `${name} is exported`).toBeGreaterThan(-1);
  const before = PROFILE_SOURCE.slice(0, at);
  return before.slice(before.lastIndexOf('/**'));
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function draws(distribution: Distribution, count: number, seed = 1): number[] {
  const next = seededStream(seed, 'test');
  return Array.from({ length: count }, () => sample(distribution, next)).sort((a, b) => a - b);
}

describe('the AWS-shaped profile (local/latency/aws-profile.ts)', () => {
  it('polls each shard 4 times a second with no batching window, as the Lambda documentation gives', () => {
    expect(ESM_POLLS_PER_SECOND).toBe(4);
    expect(ESM_POLL_INTERVAL_MS).toBe(250);
    expect(ESM_BATCHING_WINDOW_MS).toBe(0);
    expect(commentAbove('ESM_POLLS_PER_SECOND')).toContain('https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html');
    expect(commentAbove('ESM_POLLS_PER_SECOND')).toContain('base rate of 4 times per');
  });

  it.each(AWS_PROFILE_DELAYS.map((delay) => [delay.constant, delay] as const))('%s names its AWS source, and says so where its number is an assumption', (constant, delay) => {
    const comment = commentAbove(constant);
    expect(comment).toMatch(/https:\/\/(docs\.aws\.amazon\.com|repost\.aws)\//);
    if (delay.documented) expect(comment).not.toContain('ASSUMPTION');
    else expect(comment).toContain('ASSUMPTION');
  });

  it.each(AWS_PROFILE_DELAYS.map((delay) => [delay.constant, delay.distribution] as const))(
    'docs/performance.md shows %s with the numbers the profile draws from',
    (constant, distribution) => {
      const docs = readFileSync(new URL('../../docs/performance.md', import.meta.url), 'utf8');
      const row = docs.split('\n').find((line) => line.startsWith('|') && line.includes(`\`${constant}\``));
      expect(row, `a table row names ${constant}`).toBeDefined();
      const ms = (n: number) => n.toLocaleString('en-US');
      expect(row).toContain(distribution.kind === 'lognormal' ? `${ms(distribution.medianMs)} / ${ms(distribution.p99Ms)} ms` : `${ms(distribution.minMs)}–${ms(distribution.maxMs)} ms`);
    },
  );

  it('draws the cold start rate from the operator guide: under 1 % of invocations', () => {
    expect(LAMBDA_COLD_START_RATE).toBe(0.01);
    expect(commentAbove('LAMBDA_COLD_START_RATE')).toContain('https://docs.aws.amazon.com/lambda/latest/operatorguide/execution-environments.html');
  });

  it.each(AWS_PROFILE_DELAYS.filter((d) => d.distribution.kind === 'lognormal').map((d) => [d.constant, d.distribution] as const))(
    '%s: 20,000 seeded draws have the declared median (within 3 %) and p99 (within 8 %)',
    (_constant, distribution) => {
      if (distribution.kind !== 'lognormal') throw new Error('filtered to log-normals');
      const sorted = draws(distribution, 20_000);
      expect(quantile(sorted, 0.5)).toBeGreaterThan(distribution.medianMs * 0.97);
      expect(quantile(sorted, 0.5)).toBeLessThan(distribution.medianMs * 1.03);
      expect(quantile(sorted, 0.99)).toBeGreaterThan(distribution.p99Ms * 0.92);
      expect(quantile(sorted, 0.99)).toBeLessThan(distribution.p99Ms * 1.08);
      expect(sorted[0]).toBeGreaterThan(0);
    },
  );

  it('the poll phase is uniform over one 250 ms cycle', () => {
    const phase = AWS_PROFILE_DELAYS.find((d) => d.constant === 'ESM_POLL_PHASE')!.distribution;
    const sorted = draws(phase, 20_000);
    expect(sorted[0]).toBeGreaterThanOrEqual(0);
    expect(sorted.at(-1)).toBeLessThan(250);
    expect(quantile(sorted, 0.25)).toBeCloseTo(62.5, -1);
    expect(quantile(sorted, 0.5)).toBeCloseTo(125, -1);
    expect(quantile(sorted, 0.75)).toBeCloseTo(187.5, -1);
  });

  it('a seed gives the same delays again, and another seed others', () => {
    const take = (seed: number) => {
      const profile = createAwsProfile(seed);
      return [profile.requestMs(), profile.deliveryMs(), profile.managementPostMs(), profile.pollPhaseMs(), profile.requestMs()];
    };
    expect(take(42)).toEqual(take(42));
    expect(take(43)).not.toEqual(take(42));
  });

  it("each hop draws from its own stream: drawing more requests does not shift the posts' delays", () => {
    const quiet = createAwsProfile(7);
    const busy = createAwsProfile(7);
    for (let i = 0; i < 100; i += 1) busy.requestMs();
    expect([busy.managementPostMs(), busy.managementPostMs()]).toEqual([quiet.managementPostMs(), quiet.managementPostMs()]);
  });

  it('about 1 % of requests pay a cold start (over 150 ms, which a warm call almost never reaches)', () => {
    const profile = createAwsProfile(3);
    const count = 100_000;
    let slow = 0;
    for (let i = 0; i < count; i += 1) if (profile.requestMs() > 150) slow += 1;
    // P(cold) × P(cold start > ~130 ms) = 0.01 × 0.95.
    expect(slow / count).toBeGreaterThan(0.0075);
    expect(slow / count).toBeLessThan(0.0115);
  });

  it('a warm request waits API Gateway and Lambda plus one DynamoDB request: median about 19 ms', () => {
    const profile = createAwsProfile(5);
    const sorted = Array.from({ length: 20_000 }, () => profile.requestMs()).sort((a, b) => a - b);
    expect(quantile(sorted, 0.5)).toBeGreaterThan(API_GATEWAY_LAMBDA_WARM.kind === 'lognormal' ? API_GATEWAY_LAMBDA_WARM.medianMs : 0);
    expect(quantile(sorted, 0.5)).toBeLessThan(25);
  });
});

describe('the latency hooks (local/latency/hooks.ts)', () => {
  function recorder() {
    const asked: Array<{ hop: LatencyHop; ms: number }> = [];
    return { asked, delay: async (hop: LatencyHop, ms: number) => void asked.push({ hop, ms }) };
  }

  it("'local' has no hooks: the local stack waits for nothing", () => {
    expect(createLatencyHooks('local', { nowMs: () => 0, delay: recorder().delay })).toBeUndefined();
  });

  it("'aws' asks its delay for each hop the delays the seeded profile draws, in order", async () => {
    const { asked, delay } = recorder();
    const hooks = createLatencyHooks('aws', { seed: 11, nowMs: () => 0, delay })!;
    const same = createAwsProfile(11);
    await hooks.request('acquire');
    await hooks.request('renew');
    await hooks.managementPost();
    await hooks.stream.delivery(new AbortController().signal);
    expect(asked).toEqual([
      { hop: 'request', ms: same.requestMs() },
      { hop: 'request', ms: same.requestMs() },
      { hop: 'management-post', ms: same.managementPostMs() },
      { hop: 'stream-delivery', ms: same.deliveryMs() },
    ]);
  });

  it("provisioned concurrency: a route's invocations up to its count at once are never cold, the ones beyond it may be", async () => {
    const { asked, delay } = recorder();
    const hooks = createLatencyHooks('aws', { seed: 3, nowMs: () => 0, delay, provisioned: { acquire: 2 } })!;
    const same = createAwsProfile(3);
    const expected: number[] = [];
    for (let i = 0; i < 600; i += 1) {
      // Two acquires at once (within the two environments), then a third beside them (on demand).
      const endings = [await hooks.request('acquire'), await hooks.request('acquire'), await hooks.request('acquire')];
      expected.push(same.requestMs(true), same.requestMs(true), same.requestMs(false));
      for (const ended of endings) ended();
      endings[2]!(); // a second call of the same ending counts once
    }
    expect(asked.map((a) => a.ms)).toEqual(expected);
    const provisioned = asked.filter((_, i) => i % 3 !== 2).map((a) => a.ms);
    const onDemand = asked.filter((_, i) => i % 3 === 2).map((a) => a.ms);
    expect(Math.max(...provisioned)).toBeLessThan(150);
    // 600 on-demand invocations at 1 %: this seed draws cold starts among them.
    expect(onDemand.filter((ms) => ms > 150).length).toBeGreaterThan(0);
  });

  it('a route without provisioned concurrency draws its cold starts as before: routes do not share environments', async () => {
    const { asked, delay } = recorder();
    const hooks = createLatencyHooks('aws', { seed: 3, nowMs: () => 0, delay, provisioned: { handoff: 1 } })!;
    const same = createAwsProfile(3);
    for (let i = 0; i < 300; i += 1) (await hooks.request('acquire'))();
    expect(asked.map((a) => a.ms)).toEqual(Array.from({ length: 300 }, () => same.requestMs()));
  });

  it('polls fall on one 250 ms cycle at the seeded phase, however late the poller asks', async () => {
    const { asked, delay } = recorder();
    let nowMs = 1_000;
    const hooks = createLatencyHooks('aws', { seed: 11, nowMs: () => nowMs, delay })!;
    const phase = createAwsProfile(11).pollPhaseMs();
    const signal = new AbortController().signal;
    const askedAt = [1_000, 1_003, 1_250 + phase, 1_777, 5_000];
    for (const at of askedAt) {
      nowMs = at;
      await hooks.stream.nextPoll(signal);
    }
    expect(asked).toHaveLength(askedAt.length);
    asked.forEach(({ hop, ms }, i) => {
      expect(hop).toBe('stream-poll');
      expect(ms).toBeGreaterThan(0);
      expect(ms).toBeLessThanOrEqual(250);
      const cycles = (askedAt[i]! + ms - (1_000 + phase)) / 250;
      expect(cycles).toBeCloseTo(Math.round(cycles), 9);
    });
  });
});

describe('choosing the profile', () => {
  it.each([
    [{ latency: 'fast' }, 'Expected `latency` to be one of local, aws, got "fast".'],
    [{ latencySeed: -1 }, 'Expected `latencySeed` to be an integer from 0 to 2^32 - 1, got -1.'],
    [{ latencyDelay: 5 }, 'Expected `latencyDelay` to be a function (hop, ms, signal) => Promise<void>, got 5.'],
  ])('the local server refuses %j with a message naming the option and the value', (options, message) => {
    expect(() => validateLocalServerOptions({ tableName: 'leases', ...options })).toThrow(new TypeError(message));
  });

  it('npm start reads --latency aws, and leaves the default to the server when it is absent', () => {
    expect(readStartOptions(['--latency', 'aws'], {})).toMatchObject({ latency: 'aws' });
    expect(readStartOptions([], {})).not.toHaveProperty('latency');
  });

  it('npm start refuses --latency bogus, naming the values it takes', () => {
    expect(() => readStartOptions(['--latency', 'bogus'], {})).toThrow(new TypeError('Expected `--latency` to be one of local, aws, got "bogus".'));
  });

  it('the local server refuses a provisioned concurrency naming no route of the registry', () => {
    expect(() => validateLocalServerOptions({ tableName: 'leases', provisionedConcurrency: { nope: 1 } })).toThrow(/Expected `provisionedConcurrency` to name routes of the registry/);
  });

  it('npm start reads --provisioned-concurrency with --latency aws: the handover preset, or route=count pairs', () => {
    expect(readStartOptions(['--latency', 'aws', '--provisioned-concurrency', 'handover'], {})).toMatchObject({ provisionedConcurrency: HANDOVER_PROVISIONED_CONCURRENCY });
    expect(readStartOptions(['--latency', 'aws', '--provisioned-concurrency', 'acquire=2,handoff=1'], {})).toMatchObject({ provisionedConcurrency: { acquire: 2, handoff: 1 } });
  });

  it('npm start refuses --provisioned-concurrency without --latency aws, whose cold starts it is about', () => {
    expect(() => readStartOptions(['--provisioned-concurrency', 'handover'], {})).toThrow(/give it with `--latency aws`/);
  });

  it('npm start names the -- when npm kept `--latency aws` for itself', () => {
    expect(() => readStartOptions(['aws'], { npm_lifecycle_event: 'start', npm_config_latency: 'true' })).toThrow(
      'npm kept --latency aws for itself: options for the server go after `--`, as in npm start -- --latency aws',
    );
  });
});
