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
} from './api/lease-client.js';
export type { CallOptions, HeadersHook, RetryOptions } from './transport/http.js';
export { DEFAULT_ENDPOINT_COOL_OFF_MS, type EndpointInput } from './transport/endpoints.js';
export { EndpointConfigurationError, isEndpointConfigurationError } from './transport/endpoint-errors.js';
export { EndpointMetrics, type EndpointEvent, type EndpointEventHook, type EndpointMetricName, type EndpointSample } from './transport/endpoint-events.js';
export type { BatchOptions } from './api/renew-batcher.js';
export type { AwsCredentials, AwsCredentialsProvider, RequestSigner, SignableRequest, SigV4SignerOptions } from './transport/signing.js';
export { CredentialsNotFoundError, isCredentialsNotFoundError, type CredentialsSource } from './transport/credentials-error.js';
export { createLeader, type Leader, type LeaderOptions } from './leader/leader.js';
export { LeadershipLostError, type LeaderEvent, type LossReason, type TermInfo } from './term/events.js';
export type { TermOptions } from './term/context.js';
export { NotElectedError, isNotElectedError } from './leader/campaign-waiters.js';
export { NOTE_WAIT_AFTER_MS, WARN_EVERY_MS, type WarningsOption } from './term/wait-notices.js';
export { withLease, type WithLeaseLambdaResult, type WithLeaseOptions, type WithLeaseResult } from './job/with-lease.js';
export { createSemaphore, withPermit, type Semaphore, type SemaphoreOptions, type WithPermitOptions, type WithPermitResult } from './semaphore/semaphore.js';
export { RwlockClient, createRwlockHolder, withRwlock, type RwlockAcquireResult, type RwlockHolderOptions, type WithRwlockOptions, type WithRwlockResult } from './rwlock/rwlock.js';
export {
  DEFAULT_LAMBDA_MARGIN_MS,
  InvocationDeadlineError,
  isInvocationDeadlineError,
  type DeadlineRefusal,
  type LambdaContextLike,
  type LambdaOptions,
} from './time/lambda-deadline.js';
export {
  EpochNotClaimedError,
  FencedOutError,
  isEpochNotClaimedError,
  isFencedOutError,
  type Fence,
  type FenceClaimOptions,
  type FencingOptions,
} from './fence/fence.js';
export { createLeaseGroup, type GroupEvent, type LeaseGroup, type LeaseGroupApi, type LeaseGroupOptions, type PartitionTermInfo } from './group/lease-group.js';
export { MAX_GROUP_PARTITIONS, memberIdFor, memberLeaseName, partitionLeaseName } from './group/names.js';
export { planBalance, type GroupMember, type GroupMove, type GroupPlan, type GroupView } from './group/plan.js';
export { DEFAULT_WEIGHTED_POLICY, planWeighted, type WeightedMember, type WeightedMemberPlan, type WeightedPlan, type WeightedPolicy, type WeightedView } from './group/weighted-plan.js';
export type { GroupBalanceView, LoadBalancingOptions, MemberBalance } from './group/load-balancing.js';
export { observe, type LeaderChange, type ObserveOptions } from './watch/observe.js';
export {
  createWatch,
  type WatchClient,
  type WatchFilter,
  type WatchListener,
  type WatchOption,
  type WatchOptions,
  type WatchReconnectOptions,
  type WatchState,
  type WatchSubscription,
  type WebSocketFactory,
  type WebSocketLike,
} from './watch/watch.js';
export { DEFAULT_UNHEALTHY_AFTER, defaultHealthCheckTimeoutMs, type HealthCheck, type HealthCheckFailure, type HealthOptions } from './leader/health.js';
export { LeaderMetrics, PROMETHEUS_CONTENT_TYPE, type MetricName, type MetricSample } from './term/metrics.js';
export { ManualClock, systemClock, type CancelTimer, type MonotonicClock } from './time/clock.js';
export { DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_TTL_MS, defaultDriftMarginMs, defaultPauseThresholdMs, type TimingOptions } from './time/timing.js';
