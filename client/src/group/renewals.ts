import type { MonotonicClock } from '../time/clock.js';
import { RenewBatcher } from '../api/renew-batcher.js';
import type { LeaseGroupApi } from './types.js';

/**
 * The client a group's terms use. Every renewal of a member's leases (its partitions and its
 * membership, all under `<group>.`) goes into one RenewBatcher over the client's `renewBatch`, the
 * same batcher LeaseClient uses for its `batch` option, whatever that option says: the member
 * aligns all its renewals to one rhythm (`Membership.alignRenewal`), so they leave together in one
 * request. The terms' renewals carry the server's own grant fields and a checked ttl, and the
 * batched route checks every entry, so nothing is checked again here. A client without
 * `renewBatch` is used as it is, one renew request per lease.
 */
export function batchingRenewals(client: LeaseGroupApi, prefix: string, clock: MonotonicClock): LeaseGroupApi {
  const renewBatch = client.renewBatch;
  if (typeof renewBatch !== 'function') return client;
  const batcher = new RenewBatcher({ prefix }, (p, entries, call) => renewBatch.call(client, p, entries, call), clock);
  const handoffBatch = client.handoffBatch;
  return {
    signer: client.signer,
    endpoint: client.endpoint,
    endpoints: client.endpoints,
    acquire: (name, request, call) => client.acquire(name, request, call),
    renew: (name, request, call) => batcher.renew(name, request, call),
    release: (name, grant, call) => client.release(name, grant, call),
    handoff: (name, request, call) => client.handoff(name, request, call),
    describeGroup: (group, request, call) => client.describeGroup(group, request, call),
    ...(typeof handoffBatch === 'function' ? { handoffBatch: (p: string, handoffs, call) => handoffBatch.call(client, p, handoffs, call) } : {}),
  } satisfies LeaseGroupApi;
}
