/**
 * Which lease-table stream records reach the stream handler when a deployment turns `renewed`
 * events off (the construct's `watch: { renewedEvents: false }`; `WATCH_RENEWED_EVENTS=false`,
 * functions/config.ts, in Lambda and under `npm start`).
 *
 * A renewal is by far the most frequent write (one per held lease every ttl/3) and tells a
 * follower nothing; with renewed events off, the Lambda event source mapping drops it before it
 * costs an invocation and two subscriber Queries. Each write names itself in `lastOp`
 * (lease-store.ts) because a filter pattern can test the fields of one image but cannot compare
 * the old image with the new one.
 */

import { LAST_OP_ATTRIBUTE } from '../lease-record.js';

/**
 * The event source mapping's filter (Lambda FilterCriteria pattern): every record whose new image
 * was written by something other than a renew. Records without a new image (TTL deletes) do not
 * match either; they produce no event anyway.
 */
export const SKIP_RENEWALS_PATTERN = {
  dynamodb: { NewImage: { [LAST_OP_ATTRIBUTE]: { S: [{ 'anything-but': ['renew'] }] } } },
} as const;

/** SKIP_RENEWALS_PATTERN as a predicate, for the local stream poller (which plays the event source mapping). */
export function passesSkipRenewals(record: { dynamodb?: { NewImage?: Record<string, unknown> } }): boolean {
  const lastOp = record.dynamodb?.NewImage?.[LAST_OP_ATTRIBUTE] as { S?: unknown } | undefined;
  return typeof lastOp?.S === 'string' && lastOp.S !== 'renew';
}
