import { randomInt } from 'node:crypto';
import type { RouteId } from '../../client/src/protocol/index.js';
import type { ProvisionedConcurrency } from '../../infra/provisioned-concurrency.js';
import { createAwsProfile, type LatencyProfile } from './aws-profile.js';

/**
 * Where the local server waits under `latency: 'aws'`: before a request's handler, at the stream
 * poller's polls and deliveries, and before each management API call. Under 'local' there are no
 * hooks at all, so the local stack runs exactly as before.
 *
 * Every wait goes through one `LatencyDelay`, so a test can inject one that records which hop asked
 * for how long (and asserts the profile, not the wall clock).
 */
export const LATENCY_PROFILES = ['local', 'aws'] as const;
export type LatencyProfileName = (typeof LATENCY_PROFILES)[number];

export type LatencyHop = 'request' | 'stream-poll' | 'stream-delivery' | 'management-post';

/** Waits `ms` for `hop`; resolves early when `signal` aborts (a stopping poller), never rejects. */
export type LatencyDelay = (hop: LatencyHop, ms: number, signal?: AbortSignal) => Promise<void>;

/** What the stream poller asks under the profile, in the event source mapping's place. */
export interface StreamSchedule {
  /** Waits for the next poll of the stream's shard (a fixed cycle at a phase of its own). */
  nextPoll(signal: AbortSignal): Promise<void>;
  /** Waits from the poll that found records to the invocation of the stream handler. */
  delivery(signal: AbortSignal): Promise<void>;
}

export interface LatencyHooks {
  readonly profile: LatencyProfile;
  /**
   * Before an HTTP request's handler for `route`. Resolves with what to call once the handler has
   * answered: the invocation holds its environment until then.
   */
  request(route: RouteId): Promise<() => void>;
  readonly stream: StreamSchedule;
  /** Before each management API call (PostToConnection and the others). */
  managementPost(): Promise<void>;
}

export interface LatencyHookOptions {
  /** The profile's seed. Default: a random one (read it back from `hooks.profile.seed`). */
  seed?: number;
  /** How to wait. Default: a timer. */
  delay?: LatencyDelay;
  /** The server's clock, in ms: where the poll cycle's instants fall. */
  nowMs: () => number;
  /**
   * The deployment's provisioned concurrency per route (infra/provisioned-concurrency.ts): while no
   * more than that many of a route's invocations run at once, each is served by an initialized
   * environment and never cold. Default: none (every route on demand).
   */
  provisioned?: ProvisionedConcurrency;
}

/** The hooks of the named profile: none for 'local'. */
export function createLatencyHooks(name: LatencyProfileName, options: LatencyHookOptions): LatencyHooks | undefined {
  if (name === 'local') return undefined;
  const profile = createAwsProfile(options.seed ?? randomInt(2 ** 32));
  const delay = options.delay ?? sleep;
  const interval = profile.pollIntervalMs;
  // One poll cycle for the poller: DynamoDB Local's stream has one open shard at a time.
  const cycleStartMs = options.nowMs() + profile.pollPhaseMs();
  const provisioned = options.provisioned ?? {};
  const running = new Map<RouteId, number>();
  return {
    profile,
    request: async (route) => {
      const inFlight = (running.get(route) ?? 0) + 1;
      running.set(route, inFlight);
      let done = false;
      const finished = () => {
        if (done) return;
        done = true;
        running.set(route, (running.get(route) ?? 1) - 1);
      };
      await delay('request', profile.requestMs(inFlight <= (provisioned[route] ?? 0)));
      return finished;
    },
    stream: {
      nextPoll: (signal) => {
        const intoCycle = (((options.nowMs() - cycleStartMs) % interval) + interval) % interval;
        return delay('stream-poll', interval - intoCycle, signal);
      },
      delivery: (signal) => delay('stream-delivery', profile.deliveryMs(), signal),
    },
    managementPost: () => delay('management-post', profile.managementPostMs()),
  };
}

/** The default delay: a timer that an abort ends at once. */
export const sleep: LatencyDelay = (_hop, ms, signal) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
