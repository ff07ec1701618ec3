import { LeaseClient, createLeader, type Leader } from '../client/src/index.js';
import { sleep } from './clock.js';
import { LOCK_CLIENT_VERSION } from './lock-client.js';
import { HOURS_PER_MONTH, PRICE_PER_REQUEST_NO_LOGS_USD, PRICE_PER_REQUEST_USD, REFERENCE_TTL_MS } from './prices.js';

/**
 * Section 4: request cost. leasehold's leader and follower are measured (every HTTP attempt the SDK
 * makes is counted by wrapping its `fetch`); client-go's defaults and fixed-interval pollers are
 * computed from their periods and stated as such. Prices are the assumptions of docs/deploy.md ("Cost estimate per lease per month").
 */


export interface CostRow {
  system: string;
  /** measured | computed */
  source: 'measured' | 'computed';
  how: string;
  leaderPerHour: number;
  followerPerHour: number;
  /** Follower requests per lease term (ttl). */
  followerPerTerm: number;
  /** One leader + one follower, per lease per month, at the price per request of docs/deploy.md. */
  usdPerLeaseMonth: number;
  usdPerLeaseMonthNoLogs: number;
  /** Each further follower adds this much per month. */
  usdPerExtraFollowerMonth: number;
}

export interface CostMeasurement {
  ttlMs: number;
  terms: number;
  leaderRequests: number;
  followerRequests: number;
  rows: CostRow[];
  /** leasehold's follower with the watch, when the SDK has it: HTTP requests and WebSocket messages. */
  watchFollower?: { requests: number; perTerm: number };
}

function countingFetch(counter: { n: number }): typeof fetch {
  return (input, init) => {
    counter.n += 1;
    return fetch(input, init);
  };
}

export function row(system: string, source: CostRow['source'], how: string, leaderPerHour: number, followerPerHour: number): CostRow {
  const termsPerHour = 3_600_000 / REFERENCE_TTL_MS;
  return {
    system,
    source,
    how,
    leaderPerHour,
    followerPerHour,
    followerPerTerm: followerPerHour / termsPerHour,
    usdPerLeaseMonth: (leaderPerHour + followerPerHour) * HOURS_PER_MONTH * PRICE_PER_REQUEST_USD,
    usdPerLeaseMonthNoLogs: (leaderPerHour + followerPerHour) * HOURS_PER_MONTH * PRICE_PER_REQUEST_NO_LOGS_USD,
    usdPerExtraFollowerMonth: followerPerHour * HOURS_PER_MONTH * PRICE_PER_REQUEST_USD,
  };
}

/**
 * Runs one leader and one follower on one lease for `terms` lease terms and counts their requests.
 * Requests per term do not depend on the TTL (the leader renews every ttl/3; the follower waits
 * the server's retryAfterMs), so a short TTL measures the same ratio in less time; hourly numbers
 * are then stated at the SDK's default TTL of 15 s.
 */
export async function measureRequestCost(options: { endpoint: string; ttlMs: number; terms: number; name: string; watchUrl?: string }): Promise<CostMeasurement> {
  const leaderCount = { n: 0 };
  const followerCount = { n: 0 };
  const leader = createLeader(new LeaseClient({ endpoint: options.endpoint, fetch: countingFetch(leaderCount) }), {
    name: options.name,
    holder: 'cost-leader',
    ttlMs: options.ttlMs,
  });
  await leader.campaign();
  const follower = createLeader(new LeaseClient({ endpoint: options.endpoint, fetch: countingFetch(followerCount) }), {
    name: options.name,
    holder: 'cost-follower',
    ttlMs: options.ttlMs,
  });
  follower.start();
  let watchFollower: Leader | undefined;
  const watchCount = { n: 0 };
  if (options.watchUrl) {
    watchFollower = createLeader(new LeaseClient({ endpoint: options.endpoint, fetch: countingFetch(watchCount) }), {
      name: options.name,
      holder: 'cost-watch-follower',
      ttlMs: options.ttlMs,
      watch: options.watchUrl,
    });
    watchFollower.start();
  }
  // Let the follower settle into its schedule, then count over whole terms.
  await sleep(options.ttlMs);
  leaderCount.n = 0;
  followerCount.n = 0;
  watchCount.n = 0;
  await sleep(options.ttlMs * options.terms);
  const leaderRequests = leaderCount.n;
  const followerRequests = followerCount.n;
  const watchRequests = watchCount.n;
  await Promise.all([follower.stop(), watchFollower?.stop()]);
  await leader.stop();

  const termsPerHour = 3_600_000 / REFERENCE_TTL_MS;
  const leaderPerTerm = leaderRequests / options.terms;
  const followerPerTerm = followerRequests / options.terms;
  const rows: CostRow[] = [
    row('leasehold', 'measured', `leader renews every ttl/3 less 1 %; follower sends its next acquire retryAfterMs after its last one, 15 ms early, and the server waits the rest`, leaderPerTerm * termsPerHour, followerPerTerm * termsPerHour),
    // client-go tools/leaderelection with its defaults (leaseDuration 15 s, renewDeadline 10 s,
    // retryPeriod 2 s): the leader renews every retryPeriod (one Update with the optimistic fast
    // path of recent versions; Get + Update before it); a follower runs tryAcquireOrRenew (one Get)
    // under wait.JitterUntil(retryPeriod, JitterFactor 1.2), i.e. every 2–4.4 s, 3.2 s on average.
    row('client-go defaults', 'computed', 'retryPeriod 2 s: leader one Update every 2 s; follower one Get every 2–4.4 s (JitterFactor 1.2, mean 3.2 s)', 1_800, 3_600_000 / 3_200),
    row('fixed poller, 1 s', 'computed', 'leader renews every ttl/3 (5 s); follower tries to acquire every 1 s', 720, 3_600),
    row('fixed poller, ttl/3', 'computed', 'leader renews and follower polls every ttl/3 (5 s)', 720, 720),
  ];
  return {
    ttlMs: options.ttlMs,
    terms: options.terms,
    leaderRequests,
    followerRequests,
    rows,
    ...(watchFollower ? { watchFollower: { requests: watchRequests, perTerm: watchRequests / options.terms } } : {}),
  };
}

/**
 * The npm dynamodb-lock-client's row, from bench/lock-client.ts's count over the same number of
 * terms: every DocumentClient call of the holder (heartbeat puts every ttl/3) and of the follower
 * (a get, a wait, a conditional put, again), stated per hour at the reference TTL like leasehold's.
 */
export function lockClientCostRow(trustLocalTime: boolean, measured: { leaderRequests: number; followerRequests: number }, terms: number): CostRow {
  const termsPerHour = 3_600_000 / REFERENCE_TTL_MS;
  return row(
    `dynamodb-lock-client ${LOCK_CLIENT_VERSION}${trustLocalTime ? ', trustLocalTime' : ' (defaults)'}`,
    'measured',
    trustLocalTime
      ? "holder heartbeat put every ttl/3; follower get, waits what is left of the lease by the item's timestamp, conditional put, again"
      : 'holder heartbeat put every ttl/3; follower get, waits the whole lease duration, conditional put, again',
    (measured.leaderRequests / terms) * termsPerHour,
    (measured.followerRequests / terms) * termsPerHour,
  );
}
