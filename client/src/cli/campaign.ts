/// <reference types="node" />
import type { AcquireResult, LeaseApi } from '../api/lease-client.js';
import { isLeaseholdError, type PublicLease } from '../protocol/index.js';
import { isCredentialsNotFoundError } from '../transport/credentials-error.js';
import { CONFIGURATION_CODES } from './exit-codes.js';
import { isEndpointConfigurationError } from '../transport/endpoint-errors.js';

/**
 * What `run` and `sidecar` add around the SDK's leader: a view of its campaign (who holds the lease
 * while we wait, which error keeps us from it) and a shorter wait between attempts.
 *
 * The SDK's follower sleeps until the holder's lease would expire (`retryAfterMs`), which is right
 * after a crash but slow after a *release*: a rolling deploy or an unhealthy leader that releases
 * would leave the lease idle for up to a ttl. Capping each wait at `retryEveryMs` (the renewal
 * interval by default) takes a released lease over within one interval. After a crash nothing
 * changes: the last wait before the expiry is the exact `retryAfterMs` the server reported, so the
 * follower still tries right at the expiry. The cost is one conditional write per follower per
 * interval, the same rate at which the leader renews.
 */
export interface CampaignHooks {
  /** Every "held" answer: the current public state of the lease. */
  onHeld(lease: PublicLease, retryAfterMs: number): void;
  /** Every acquire that failed (network, 5xx, 4xx), before the SDK backs off and retries. */
  onError(error: unknown): void;
  /**
   * A failure that retrying cannot fix (bad input, refused or missing credentials, no signing
   * region, not a leasehold endpoint) before the service ever answered: the caller should stop and say so. Later ones are only
   * reported through onError (credentials may be refreshed, IAM may settle).
   */
  onFatal(error: unknown): void;
}

export function campaignApi(client: LeaseApi, retryEveryMs: number, hooks: CampaignHooks): LeaseApi {
  let answered = false;
  return {
    async acquire(name, request, call): Promise<AcquireResult> {
      let result: AcquireResult;
      try {
        result = await client.acquire(name, request, call);
      } catch (error) {
        if (call?.signal?.aborted) throw error; // our own cancellation, not a failure
        // Missing credentials, or a TypeError (from the signer or the options: no region), never come from the network.
        const configuration = isLeaseholdError(error) ? CONFIGURATION_CODES.has(error.code) : isCredentialsNotFoundError(error) || error instanceof TypeError;
        // An endpoint that does not serve the API ends the SDK's campaign whenever it comes: so does this.
        if ((!answered && configuration) || isEndpointConfigurationError(error)) hooks.onFatal(error);
        else hooks.onError(error);
        throw error;
      }
      answered = true;
      if (result.acquired) return result;
      hooks.onHeld(result.lease, result.retryAfterMs);
      return { ...result, retryAfterMs: Math.min(result.retryAfterMs, retryEveryMs) };
    },
    renew: (name, request, call) => client.renew(name, request, call),
    release: (name, grant, call) => client.release(name, grant, call),
    // A Leader yielding to a higher-priority claimant hands the lease off to it.
    ...(client.handoff ? { handoff: client.handoff.bind(client) } : {}),
    ...(client.proclaim ? { proclaim: client.proclaim.bind(client) } : {}),
  };
}

/** Resolves with the promise's value, or undefined after `ms`: shutdown must not hang on a dead network. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    timer.unref?.();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(undefined);
      },
    );
  });
}

/** One line per distinct message, so a follower retrying every second does not flood the log. */
export function dedupe(write: (line: string) => void): (line: string) => void {
  let last: string | undefined;
  return (line) => {
    if (line === last) return;
    last = line;
    write(line);
  };
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
