import { accepted, requireField, requireObject, type Checked, type LeaseName } from './checks.js';
import { batchEntries, validateLeaseId, validateToken } from './rules.js';
import { RWLOCK_REQUEST_FIELDS, type RwlockGrant, type RwlockGrantRef } from './rwlock.js';
import type { ErrorBody } from './types.js';

/**
 * Batched renewals of rwlock grants: `POST /v1/prefixes/{prefix}/rwlocks/renew`, the rwlock
 * counterpart of the leases' batched renew. Each entry is the single rwlock renew
 * (`POST /v1/rwlocks/{name}/renew`) plus the rwlock's name, and is answered as that route would
 * answer it, in request order. One name may appear in many entries: the readers of one rwlock in
 * one process renew together.
 */

/** The body fields of the batched rwlock renew. */
export const RWLOCK_BATCH_REQUEST_FIELDS = ['grants'] as const;

/** The fields of one entry: the single renew's, plus the rwlock's name. */
export const RWLOCK_BATCH_ENTRY_FIELDS = ['name', ...RWLOCK_REQUEST_FIELDS['rwlock-renew']] as const;

/** One entry of a batched rwlock renew. */
export interface RwlockBatchRenewEntry extends RwlockGrantRef {
  name: string;
}

/** `POST /v1/prefixes/{prefix}/rwlocks/renew`: 1-100 renewals of grants of rwlocks whose names start with the prefix. */
export interface RwlockBatchRenewRequest {
  grants: RwlockBatchRenewEntry[];
}

/**
 * Each entry's outcome, in request order: the grant as the single renew answers it (`writerWaiting`
 * and an unchanged expiry for a reader while a writer waits), or the error body it would have sent
 * (`LEASE_LOST` with its `reason` and the rwlock's state).
 */
export type RwlockBatchRenewResult = { name: string; grant: RwlockGrant } | { name: string; error: ErrorBody['error'] };

export interface RwlockBatchRenewResponse {
  results: RwlockBatchRenewResult[];
}

/**
 * A batched rwlock renew under `prefix`: 1-100 entries, each `{ name, leaseId, token }` of a rwlock
 * whose name starts with the prefix. A bad entry refuses the whole request (nothing is written),
 * with the field named by its index, e.g. `grants[3].token`.
 */
export function validateRwlockBatchRenewRequest(prefix: string, body: unknown): Checked<RwlockBatchRenewRequest> & { grants: Array<Checked<RwlockGrantRef> & { name: LeaseName }> } {
  const input = requireObject(body, RWLOCK_BATCH_REQUEST_FIELDS);
  const grants = batchEntries(prefix, input, 'grants', 'renewals', RWLOCK_BATCH_ENTRY_FIELDS, (entry, at) =>
    accepted<RwlockGrantRef>({
      leaseId: validateLeaseId(requireField(entry, 'leaseId', at), `${at}leaseId`),
      token: validateToken(requireField(entry, 'token', at), `${at}token`),
    }),
  );
  return accepted({ grants });
}
