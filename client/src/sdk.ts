/**
 * Everything `leasehold` and `leasehold/lambda` export alike: the whole SDK but `sigv4Signer`, whose
 * default credentials differ between the two entry points (see `signing.ts`).
 */
export * from './protocol/index.js';
export {
  LeaseClient,
  newRequestId,
  type AcquireResult,
  type GrantRef,
  type LeaseApi,
  type LeaseClientOptions,
  type PermitRef,
  type PermitResult,
  type SemaphoreApi,
} from './lease-client.js';
export type { CallOptions, HeadersHook, RetryOptions } from './transport.js';
export type { BatchOptions } from './renew-batcher.js';
export type { AwsCredentials, AwsCredentialsProvider, RequestSigner, SignableRequest, SigV4SignerOptions } from './signing.js';
export { createLeader, type Leader, type LeaderOptions } from './leader.js';
export { LeadershipLostError, type LeaderEvent, type LossReason, type TermInfo } from './term-events.js';
export type { TermOptions } from './term-context.js';
export { NotElectedError, isNotElectedError } from './campaign-waiters.js';
export { NOTE_WAIT_AFTER_MS, WARN_EVERY_MS, type WarningsOption } from './wait-notices.js';
export { withLease, type WithLeaseLambdaResult, type WithLeaseOptions, type WithLeaseResult } from './with-lease.js';
export { createSemaphore, withPermit, type Semaphore, type SemaphoreOptions, type WithPermitOptions, type WithPermitResult } from './semaphore.js';
export {
  DEFAULT_LAMBDA_MARGIN_MS,
  InvocationDeadlineError,
  isInvocationDeadlineError,
  type DeadlineRefusal,
  type LambdaContextLike,
  type LambdaOptions,
} from './lambda.js';
export {
  EpochNotClaimedError,
  FencedOutError,
  isEpochNotClaimedError,
  isFencedOutError,
  type Fence,
  type FenceClaimOptions,
  type FencingOptions,
} from './fence.js';
export { createLeaseGroup, type GroupEvent, type LeaseGroup, type LeaseGroupApi, type LeaseGroupOptions } from './lease-group.js';
export { MAX_GROUP_PARTITIONS, memberIdFor, memberLeaseName, partitionLeaseName } from './group-names.js';
export { planBalance, type GroupMember, type GroupMove, type GroupPlan, type GroupView } from './group-plan.js';
export { observe, type LeaderChange, type ObserveOptions } from './observe.js';
export {
  createWatch,
  type WatchClient,
  type WatchFilter,
  type WatchListener,
  type WatchOptions,
  type WatchReconnectOptions,
  type WatchState,
  type WatchSubscription,
  type WebSocketFactory,
  type WebSocketLike,
} from './watch.js';
export { DEFAULT_UNHEALTHY_AFTER, defaultHealthCheckTimeoutMs, type HealthCheck, type HealthCheckFailure, type HealthOptions } from './health.js';
export { LeaderMetrics, PROMETHEUS_CONTENT_TYPE, type MetricName, type MetricSample } from './metrics.js';
export { ManualClock, systemClock, type CancelTimer, type MonotonicClock } from './clock.js';
export { DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_TTL_MS, defaultDriftMarginMs, defaultPauseThresholdMs, type TimingOptions } from './timing.js';
