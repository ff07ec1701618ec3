import { ROUTES, type RouteId } from '../client/src/protocol/index.js';

/**
 * Provisioned concurrency per route function (`LeaseService`'s `provisionedConcurrency`): how many
 * execution environments Lambda keeps initialized for it, so that up to that many invocations at
 * once never wait for a cold start. One home for the rule, with no CDK in it: the construct deploys
 * it as an alias per function, and the local server's AWS-shaped latency profile
 * (`local/latency/`) skips the cold start of an invocation that such an environment serves.
 *
 * Sources: "Provisioned Concurrency keeps functions initialized and hyper-ready to respond in
 * double-digit milliseconds" (https://aws.amazon.com/lambda/pricing/); it is configured on a
 * published version or an alias, never on $LATEST
 * (https://docs.aws.amazon.com/lambda/latest/dg/provisioned-concurrency.html).
 */
export type ProvisionedConcurrency = Readonly<Partial<Record<RouteId, number>>>;

/**
 * The most environments one function may keep: Lambda's default concurrency quota per Region is
 * 1,000 and provisioned concurrency counts against it
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html).
 */
export const MAX_PROVISIONED_PER_ROUTE = 1_000;

/**
 * What the handover paths need, sized for the bench's scenarios (docs/deploy.md has the rule):
 * - `acquire`: the acquires in flight at once during a handover. A leader election needs 1–2 (the
 *   claimant's, and a follower's now and then); a lease group's leave sends one per partition it
 *   moves, at most 8 in flight per receiving member: 16 for the bench's 64 partitions over four
 *   members.
 * - `release`, `handoff`, `handoff-batch`: the call that ends a term, one at a time per lease or group.
 * Renewals are not on a handover's path: a cold renewal only delays a renewal, which the SDK sends
 * at ttl/3 with two more chances before the lease runs out.
 */
export const HANDOVER_PROVISIONED_CONCURRENCY: ProvisionedConcurrency = { acquire: 16, release: 1, handoff: 1, 'handoff-batch': 1 };

const ROUTE_IDS: ReadonlySet<string> = new Set(ROUTES.map((route) => route.id));

/**
 * Checks a provisioned concurrency setting: an object of route ids to integers from 0 (none) to
 * MAX_PROVISIONED_PER_ROUTE. Throws a TypeError naming `option` and the first bad entry.
 */
export function validateProvisionedConcurrency(value: unknown, option = 'provisionedConcurrency'): ProvisionedConcurrency {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`Expected \`${option}\` to be an object of route ids to counts, e.g. { acquire: 2, handoff: 1 }; got ${String(value)}.`);
  }
  for (const [route, count] of Object.entries(value)) {
    if (!ROUTE_IDS.has(route)) throw new TypeError(`Expected \`${option}\` to name routes of the registry (${[...ROUTE_IDS].join(', ')}); got "${route}".`);
    if (!(Number.isInteger(count) && (count as number) >= 0 && (count as number) <= MAX_PROVISIONED_PER_ROUTE)) {
      throw new TypeError(`Expected \`${option}.${route}\` to be an integer from 0 to ${MAX_PROVISIONED_PER_ROUTE}; got ${String(count)}.`);
    }
  }
  return value as ProvisionedConcurrency;
}

/**
 * Parses `npm start`'s `--provisioned-concurrency`: `handover` (HANDOVER_PROVISIONED_CONCURRENCY)
 * or a comma-separated list of `route=count`, e.g. `acquire=2,handoff=1`.
 */
export function parseProvisionedConcurrency(text: string, option = '--provisioned-concurrency'): ProvisionedConcurrency {
  if (text === 'handover') return HANDOVER_PROVISIONED_CONCURRENCY;
  const entries = text.split(',').map((part) => {
    const match = /^([a-z-]+)=(\d{1,4})$/.exec(part.trim());
    if (match === null) throw new TypeError(`Expected \`${option}\` to be "handover" or route=count pairs separated by commas (e.g. acquire=2,handoff=1); got "${part}".`);
    return [match[1] as string, Number(match[2])] as const;
  });
  const repeated = entries.find(([route], i) => entries.findIndex(([other]) => other === route) !== i);
  if (repeated !== undefined) throw new TypeError(`Expected \`${option}\` to name each route once; "${repeated[0]}" is given twice.`);
  return validateProvisionedConcurrency(Object.fromEntries(entries), option);
}
