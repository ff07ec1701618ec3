import type { LoadBalancing } from './load-balancing.js';
import type { LeaseGroupApi } from './types.js';

/**
 * The client a load-balanced member's terms use: its membership lease's acquire and renewals carry
 * the member's load report (`LoadBalancing.metadata`) when it differs from the one last accepted, so
 * the report rides on requests the member sends anyway (a renewal with metadata is a proclaim, one
 * conditional write, batched with the member's other renewals). Every other call passes through.
 */
export function publishingLoad(api: LeaseGroupApi, memberLease: string, balancing: LoadBalancing): LeaseGroupApi {
  /** The report last accepted by the server, serialized; a failed write leaves it, so the next renewal sends again. */
  let published: string | undefined;
  const report = () => {
    const metadata = balancing.metadata();
    const serialized = JSON.stringify(metadata);
    return { metadata, serialized, changed: serialized !== published };
  };
  const renewBatch = api.renewBatch;
  const handoffBatch = api.handoffBatch;
  return {
    signer: api.signer,
    endpoint: api.endpoint,
    endpoints: api.endpoints,
    acquire: async (name, request, call) => {
      if (name !== memberLease) return api.acquire(name, request, call);
      const { metadata, serialized } = report();
      const result = await api.acquire(name, { ...request, metadata }, call);
      if (result.acquired) published = serialized;
      return result;
    },
    renew: async (name, request, call) => {
      if (name !== memberLease) return api.renew(name, request, call);
      const { metadata, serialized, changed } = report();
      if (!changed) return api.renew(name, request, call);
      const grant = await api.renew(name, { ...request, metadata }, call);
      published = serialized;
      return grant;
    },
    release: (name, grant, call) => api.release(name, grant, call),
    handoff: (name, request, call) => api.handoff(name, request, call),
    describeGroup: (group, request, call) => api.describeGroup(group, request, call),
    ...(typeof renewBatch === 'function' ? { renewBatch: (prefix: string, grants, call) => renewBatch.call(api, prefix, grants, call) } : {}),
    ...(typeof handoffBatch === 'function' ? { handoffBatch: (prefix: string, handoffs, call) => handoffBatch.call(api, prefix, handoffs, call) } : {}),
  } satisfies LeaseGroupApi;
}
