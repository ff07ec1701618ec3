import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ForbiddenError } from '../../client/src/protocol/index.js';
import type { WallClock } from '../clock.js';

/**
 * Who may watch which leases.
 *
 * API Gateway's IAM auth on the watch's `$connect` proves who the caller is (the request context's
 * `identity.userArn`) and that some policy lets it open the socket, but it never shows that
 * policy, and nothing checks what an open connection subscribes to. So the construct publishes
 * each watch grant as one item of the subscriptions table (infra/watch-grant-map.ts), a
 * principal ARN with the lease-name prefixes it may watch; `$connect` looks the caller up here,
 * refuses a caller with no grant, and records the connection's prefixes for `subscribe`.
 *
 * A prefix list holds the empty prefix `''` for "every lease" (every name starts with it): a
 * grant without a prefix watches everything, as before prefixes existed.
 *
 * ARNs are compared by principal, not as strings (see {@link principalKey}): the caller of an
 * assumed role shows up as `arn:aws:sts::123456789012:assumed-role/NAME/SESSION`, without the
 * role's path, while the grant names `arn:aws:iam::123456789012:role/PATH/NAME`.
 */

/** The grant items' partition in the subscriptions table; `sk` is the grant's id in the stack. */
export const WATCH_GRANTS_PARTITION = 'grants';

/** The attributes of a grant item besides `pk`/`sk` (the construct writes them, `$connect` reads them). */
export const WATCH_GRANT_ATTRIBUTES = { principalArn: 'principalArn', prefixes: 'prefixes' } as const;

/** The prefix every lease name starts with: a grant of every lease. */
export const EVERY_LEASE = '';

/**
 * How long a function keeps the grants it read before it reads them again (60 s). A deploy that
 * changes grants does not restart the functions, so this bounds how long a new or revoked grant
 * takes to apply to new connections; IAM itself takes seconds to propagate a policy change.
 */
export const WATCH_GRANTS_CACHE_MS = 60_000;

/** What a caller may watch, by its identity: the prefixes of its grants, or undefined without one. */
export interface WatchGrants {
  prefixesOf(callerArn: string | undefined): Promise<readonly string[] | undefined>;
}

const ROLE_ARN = /^arn:([a-z-]+):iam::(\d{12}):role\/(?:[^*?]*\/)?([\w+=,.@-]+)$/;
const ASSUMED_ROLE_ARN = /^arn:([a-z-]+):sts::(\d{12}):assumed-role\/([\w+=,.@-]+)\/[\w+=,.@-]*$/;
const USER_ARN = /^arn:([a-z-]+):iam::(\d{12}):user\/(?:[^*?]*\/)?([\w+=,.@-]+)$/;

/**
 * The principal an ARN stands for, as `partition:account:role/name` or `partition:account:user/name`,
 * or undefined for anything else (the account root, federated users, services).
 *
 * Paths are dropped because an assumed-role ARN carries none, and names are compared in lower case
 * because IAM names are unique per account regardless of path and of case, so neither can tell two
 * principals apart.
 */
export function principalKey(arn: string): string | undefined {
  const role = ROLE_ARN.exec(arn) ?? ASSUMED_ROLE_ARN.exec(arn);
  if (role) return `${role[1]}:${role[2]}:role/${(role[3] as string).toLowerCase()}`;
  const user = USER_ARN.exec(arn);
  if (user) return `${user[1]}:${user[2]}:user/${(user[3] as string).toLowerCase()}`;
  return undefined;
}

/** Fixed grants, for the local server (its SigV4 credentials) and tests. */
export function staticWatchGrants(grants: ReadonlyArray<{ principalArn: string; prefixes: readonly string[] }>): WatchGrants {
  const byPrincipal = grantMap(grants);
  return { prefixesOf: async (callerArn) => lookUp(byPrincipal, callerArn) };
}

export interface TableWatchGrantsOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  clock: WallClock;
  /** Default {@link WATCH_GRANTS_CACHE_MS}. */
  cacheMs?: number;
}

/**
 * The grants the construct wrote into the subscriptions table: one Query of one partition (any
 * number of grants, paged; a grant is about 150 bytes), read at most once per `cacheMs` per
 * container, so a warm `$connect` costs no read.
 */
export class TableWatchGrants implements WatchGrants {
  private cached: { loadedAtMs: number; grants: Promise<Map<string, readonly string[]>> } | undefined;

  constructor(private readonly options: TableWatchGrantsOptions) {}

  async prefixesOf(callerArn: string | undefined): Promise<readonly string[] | undefined> {
    return lookUp(await this.load(), callerArn);
  }

  private load(): Promise<Map<string, readonly string[]>> {
    const nowMs = this.options.clock.nowMs();
    if (this.cached === undefined || nowMs - this.cached.loadedAtMs >= (this.options.cacheMs ?? WATCH_GRANTS_CACHE_MS)) {
      const grants = this.read();
      this.cached = { loadedAtMs: nowMs, grants };
      // A failed read must not be served from the cache: the next connection reads again.
      grants.catch(() => {
        if (this.cached?.grants === grants) this.cached = undefined;
      });
    }
    return this.cached.grants;
  }

  private async read(): Promise<Map<string, readonly string[]>> {
    const items: Array<{ principalArn: string; prefixes: readonly string[] }> = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.options.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :grants',
          ExpressionAttributeValues: { ':grants': WATCH_GRANTS_PARTITION },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of out.Items ?? []) {
        const principalArn = item[WATCH_GRANT_ATTRIBUTES.principalArn] as unknown;
        const prefixes = item[WATCH_GRANT_ATTRIBUTES.prefixes] as unknown;
        if (typeof principalArn === 'string' && Array.isArray(prefixes) && prefixes.every((p) => typeof p === 'string')) {
          items.push({ principalArn, prefixes });
        }
      }
      start = out.LastEvaluatedKey;
    } while (start);
    return grantMap(items);
  }
}

/**
 * Refuses a subscription with FORBIDDEN unless every name and every prefix in it lies under one
 * of `allowed`. A subscribed prefix must itself start with an allowed prefix: `team-a.jobs.` is
 * inside `team-a.`, but `team-` is not (it would match `team-b.` names too). A rwlock's name is
 * held to the same prefixes as a lease's: a grant of `team-a.` watches team-a's rwlocks too.
 */
export function assertWatchable(allowed: readonly string[], names: readonly string[], prefixes: readonly string[], rwlocks: readonly string[] = []): void {
  const outside = (value: string) => !allowed.some((prefix) => value.startsWith(prefix));
  const scope = allowed.map((p) => `"${p}"`).join(', ');
  names.forEach((name, i) => {
    if (outside(name)) throw new ForbiddenError(`names[${i}] "${name}" is outside the lease prefixes this caller may watch (${scope}).`);
  });
  prefixes.forEach((prefix, i) => {
    if (outside(prefix)) throw new ForbiddenError(`prefixes[${i}] "${prefix}" is outside the lease prefixes this caller may watch (${scope}).`);
  });
  rwlocks.forEach((name, i) => {
    if (outside(name)) throw new ForbiddenError(`rwlocks[${i}] "${name}" is outside the name prefixes this caller may watch (${scope}).`);
  });
}

function grantMap(grants: ReadonlyArray<{ principalArn: string; prefixes: readonly string[] }>): Map<string, readonly string[]> {
  const byPrincipal = new Map<string, Set<string>>();
  for (const { principalArn, prefixes } of grants) {
    const key = principalKey(principalArn);
    if (key === undefined) continue;
    const merged = byPrincipal.get(key) ?? new Set<string>();
    prefixes.forEach((p) => merged.add(p));
    byPrincipal.set(key, merged);
  }
  return new Map([...byPrincipal].map(([key, prefixes]) => [key, prefixes.has(EVERY_LEASE) ? [EVERY_LEASE] : [...prefixes].sort()]));
}

function lookUp(byPrincipal: Map<string, readonly string[]>, callerArn: string | undefined): readonly string[] | undefined {
  const key = callerArn === undefined ? undefined : principalKey(callerArn);
  return key === undefined ? undefined : byPrincipal.get(key);
}
