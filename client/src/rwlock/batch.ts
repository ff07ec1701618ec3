/**
 * Rwlock renewals in batches: a RwlockClient with `batch: { prefix, windowMs? }` carries the
 * renewals of its grants under that prefix (every reader and writer a process holds) in batched
 * requests, `POST /v1/prefixes/{prefix}/rwlocks/renew`, as a LeaseClient does for leases and with
 * the same batcher (api/renew-batcher.ts): a renewal waits at most its window (1 % of the grant's
 * ttl, at most 1 s, when the caller names the ttl; else 20 ms) or until 100 are waiting. Each
 * renewal is answered on its own: its grant (a reader's unextended one while a writer waits, with
 * `writerWaiting`), or the RwlockLostError the single renew would have raised. A holder counts its
 * renewal's validity from when it asked, so batching never lengthens what it believes.
 */
import { RenewBatcher, type BatchCodec, type BatchOptions } from '../api/renew-batcher.js';
import {
  routeRequest,
  rwlockErrorFromBody,
  validateBatchPrefix,
  validateRwlockBatchRenewRequest,
  type RwlockBatchRenewEntry,
  type RwlockBatchRenewResponse,
  type RwlockBatchRenewResult,
  type RwlockGrant,
  type RwlockGrantRef,
} from '../protocol/index.js';
import type { MonotonicClock } from '../time/clock.js';
import type { CallOptions, HttpTransport } from '../transport/http.js';

/** A renewal as the batcher takes it: the grant's reference, and its ttl when known (for the window only; never sent). */
export type RwlockRenewal = RwlockGrantRef & { ttlMs?: number | undefined };

/** The rwlocks' batched renew, for the shared batcher. */
export const RWLOCK_BATCH_CODEC: BatchCodec<RwlockRenewal, RwlockBatchRenewEntry, RwlockBatchRenewResult, RwlockGrant> = {
  entry: (name, request) => ({ name, leaseId: request.leaseId, token: request.token }),
  ttlMsOf: (request) => request.ttlMs,
  decode: (result, name) => ('grant' in result ? { answer: result.grant } : { error: rwlockErrorFromBody(result.error, name) }),
  noun: 'rwlock',
};

export type RwlockRenewBatcher = RenewBatcher<RwlockRenewal, RwlockBatchRenewEntry, RwlockBatchRenewResult, RwlockGrant>;

/** The batcher of a RwlockClient's `batch` option; undefined without one. Throws on a bad prefix or window. */
export function rwlockRenewBatcher(
  options: BatchOptions | undefined,
  send: (prefix: string, grants: RwlockBatchRenewEntry[], call: CallOptions) => Promise<RwlockBatchRenewResult[]>,
  clock: MonotonicClock,
): RwlockRenewBatcher | undefined {
  if (options === undefined) return undefined;
  validateBatchPrefix(options.prefix, 'batch.prefix');
  return new RenewBatcher(options, send, clock, RWLOCK_BATCH_CODEC);
}

/**
 * One batched rwlock renew request: up to 100 grants of rwlocks whose names start with `prefix`,
 * answered in order. Only the renew fields of each entry are sent (whole grants may be passed).
 */
export async function sendRwlockRenewBatch(transport: HttpTransport, prefix: string, grants: readonly RwlockBatchRenewEntry[], call?: CallOptions): Promise<RwlockBatchRenewResult[]> {
  validateBatchPrefix(prefix);
  const body = validateRwlockBatchRenewRequest(prefix, { grants: grants.map((g) => RWLOCK_BATCH_CODEC.entry(g.name, g)) });
  const out = (await transport.send({ operation: 'rwlock-renew-batch', ...routeRequest('rwlock-renew-batch', prefix), body, idempotent: true }, call)) as RwlockBatchRenewResponse;
  return out.results;
}
