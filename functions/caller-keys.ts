import { createHash } from 'node:crypto';

/**
 * How the stores tell callers apart without keeping who they are, or their requestIds, in clear.
 * The principal itself comes from the handler (functions/http/principal.ts); the stores only
 * receive it as a parameter.
 */

/** The principal of a call with no IAM context: the local server without SigV4, tests, tools. */
export const LOCAL_PRINCIPAL = 'local';

/**
 * What the stores keep to compare principals: a hash, so an item never carries a principal (or
 * the e-mail address in a session name) in clear. 128 bits.
 */
export function principalKey(principal: string): string {
  return createHash('sha256').update(`leasehold-principal\n${principal}`).digest('hex').slice(0, 32);
}

/**
 * What the stores keep to recognise a replayed acquire: a hash of the requestId bound to the
 * caller's principal, so the same requestId presented by another principal is a new request, and
 * the item never holds a requestId in clear. `scope` keeps a lease's, a semaphore's and a rwlock's keys apart.
 */
export function replayKey(scope: 'lease' | 'permit' | 'rwlock', principal: string, requestId: string): string {
  return createHash('sha256').update(`leasehold-${scope}-request\n${principal}\n${requestId}`).digest('hex').slice(0, 32);
}
