import { requireInteger, requireString } from './checks.js';
import { ValidationError } from './errors.js';
import { refuse } from './refuse.js';
import { CURSOR_PATTERN, LIMITS, PREFIX_PATTERN, validateGroup } from './rules.js';
import type { GroupRequest, ListRequest } from './types.js';

/**
 * The query-string rules of the read routes (`GET /v1/leases`, `GET /v1/groups/{group}`): values
 * arrive as strings, are read as own properties only, and every parameter outside a route's list
 * is refused.
 */

/** The query parameters of `GET /v1/leases`; every other route takes none. */
export const LIST_QUERY_PARAMETERS = ['prefix', 'limit', 'cursor'] as const;
/** A `limit` query parameter: digits only, then an integer from 1 to `max`. */
function queryLimit(value: unknown, max: number): number {
  if (typeof value !== 'string' || !/^[0-9]{1,5}$/.test(value)) throw refuse(value, 'limit', `must be an integer from 1 to ${max}`);
  return requireInteger(Number(value), 'limit', 1, max);
}

export const GROUP_QUERY_PARAMETERS = ['limit', 'cursor'] as const;

/** `GET /v1/groups/{group}?limit=&cursor=`: limit 1-1,000 (default 1,000), a cursor from the previous page. */
export function validateGroupRequest(group: unknown, query: Record<string, string | undefined>): GroupRequest {
  validateQueryParameters(query, GROUP_QUERY_PARAMETERS);
  const request: GroupRequest = { group: validateGroup(group), limit: LIMITS.groupMaxLimit };
  const limit = ownQueryValue(query, 'limit');
  const cursor = ownQueryValue(query, 'cursor');
  if (limit !== undefined) request.limit = queryLimit(limit, LIMITS.groupMaxLimit);
  if (cursor !== undefined && cursor !== '') request.cursor = requireString(cursor, 'cursor', CURSOR_PATTERN, 'must be a cursor returned by a previous read of the group');
  return request;
}

/**
 * Refuses any query parameter outside `allowed`. Keys are read as own properties only, so
 * `__proto__`, `constructor` or `hasOwnProperty` are unknown parameters like any other, whatever
 * prototype the caller's object has.
 */
export function validateQueryParameters(query: object | null | undefined, allowed: readonly string[]): void {
  if (query === null || query === undefined) return;
  for (const key of Object.keys(query)) {
    if (!allowed.includes(key)) {
      const expected = allowed.length === 0 ? 'this route takes none' : `expected ${allowed.join(', ')}`;
      throw new ValidationError(key, `is not a known query parameter (${expected})`);
    }
  }
}

function ownQueryValue(query: Record<string, string | undefined>, key: string): string | undefined {
  return Object.hasOwn(query, key) ? query[key] : undefined;
}

/** Query parameters arrive as strings; `limit` is parsed strictly (digits only). */
export function validateListRequest(query: Record<string, string | undefined>): Required<Pick<ListRequest, 'limit'>> & ListRequest {
  validateQueryParameters(query, LIST_QUERY_PARAMETERS);
  const prefix = ownQueryValue(query, 'prefix');
  const limit = ownQueryValue(query, 'limit');
  const cursor = ownQueryValue(query, 'cursor');
  const request: Required<Pick<ListRequest, 'limit'>> & ListRequest = { limit: LIMITS.listDefaultLimit };
  if (prefix !== undefined && prefix !== '') {
    request.prefix = requireString(prefix, 'prefix', PREFIX_PATTERN, 'must be up to 200 characters of A-Z a-z 0-9 . _ : -');
  }
  if (limit !== undefined) request.limit = queryLimit(limit, LIMITS.listMaxLimit);
  if (cursor !== undefined && cursor !== '') {
    request.cursor = requireString(cursor, 'cursor', CURSOR_PATTERN, 'must be a cursor returned by a previous list call');
  }
  return request;
}
