import { LeaseClient } from '../../client/src/api/lease-client.js';
import type { ApiNode } from './cluster.js';
import type { Journal } from './journal.js';
import { networkCode, recordingFetch } from './recording-fetch.js';

/** The operator's process name in the history. */
export const OPERATOR = 'operator';

/**
 * Revokes `lease` through API instance `api`, naming the grant it means by `expectedToken` (the
 * token the operator saw); resolves with a short account of the answer.
 */
export type Revoke = (api: ApiNode, lease: string, force: boolean, expectedToken: number) => Promise<string>;

/**
 * The operator of a chaos run: revokes leases as a person holding the construct's `grantAdmin`
 * would, with the SDK's LeaseClient, straight to one API instance (not through a worker's proxy:
 * the faults are the nemesis's choice, not the operator's network's). Every attempt is journalled
 * by recording-fetch.ts in the harness's own journal, as a `revoke` operation of process
 * "operator" with the answer's record, exactly as a worker's operations are.
 */
export function createOperator(journal: Journal, ttlMs: number): Revoke {
  const fetch = recordingFetch(journal, { process: OPERATOR, deadlineOf: () => null });
  const clients = new Map<number, LeaseClient>();
  const clientFor = (api: ApiNode): LeaseClient => {
    let client = clients.get(api.port);
    if (client === undefined) {
      // One retry, as an operator's tool would: a repeat of a revoke that names its grant answers the same record.
      client = new LeaseClient({ endpoint: `http://127.0.0.1:${api.port}`, fetch, timeoutMs: ttlMs, retry: { retries: 1, baseDelayMs: 50, maxDelayMs: 200 } });
      clients.set(api.port, client);
    }
    return client;
  };
  return async function revoke(api, lease, force, expectedToken) {
    try {
      const revoked = await clientFor(api).revoke(lease, { reason: 'chaos: the nemesis revokes the leader', force, expectedToken });
      return `token ${revoked.token} revoked (${revoked.revoked.force ? 'forced' : 'safe'} record)`;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      return typeof code === 'string' ? code : networkCode(error);
    }
  };
}
