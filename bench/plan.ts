/** What a bench run measures and how much: the sections, and the counts of a full and a quick run. */

export const SECTIONS = ['latency', 'peers', 'scale', 'cost', 'failover', 'handover', 'coldstart', 'epoch', 'bundle', 'pause', 'rolling', 'groups', 'regions', 'rwlocks'] as const;
export type Section = (typeof SECTIONS)[number];

/**
 * The sections measured under every configuration (profiles.ts): each latency profile of the local
 * server (`--latency`), with the watch's direct push and with the stream path alone.
 */
export const PROFILED_SECTIONS: readonly Section[] = ['handover', 'rolling', 'groups'];

export interface Plan {
  sequentialCount: number;
  concurrentCount: number;
  warmupCount: number;
  peerCount: number;
  failoverTrials: number;
  /** Handovers of each watch variant (resign, handoff) per run under the headline configuration (aws profile, direct push). */
  handoverTrials: number;
  /** The same under every other configuration. */
  handoverTrialsOther: number;
  /** Handovers of each system without the watch (leasehold, etcd, Redis), in the first run only. */
  handoverBaselineTrials: number;
  /** Stops of a holder per system in the pause section. */
  pauseTrials: number;
  electionTtlMs: number;
  costTtlMs: number;
  costTerms: number;
  coldStartRuns: number;
  /** Writes of each kind in the epoch fencing section. */
  epochCount: number;
  /** Fresh-process imports of each Lambda bundle in the bundle section (median reported). */
  bundleImportRuns: number;
  /** Rolling deploys of five candidates with priorities per run under the headline configuration. */
  rollingDeploys: number;
  /** The same under every other configuration. */
  rollingDeploysOther: number;
  /** Rolling deploys without priorities, in the first run only, under the first configuration. */
  rollingDeploysWithoutPriorities: number;
  /** Partitions of the group in the groups section. */
  groupPartitions: number;
  /** Rounds of the groups section (start four members, a fifth joins, a kill, a leave) per run and configuration, each on a fresh group. */
  groupRounds: number;
  /** The steady window of the groups section in which each member's requests are counted, in ttls (headline configuration). */
  groupSteadyTtls: number;
  /** The same under every other configuration. */
  groupSteadyTtlsOther: number;
  scale: Array<{ leases: number; ttlMs: number; windowMs: number; batch?: boolean }>;
  /** The regions section: the holders' ttl (renewed at the SDK's default interval), how many, and how many ttls one Region is down. */
  regionsTtlMs: number;
  regionsHolders: number;
  regionsOutageTtls: number;
  /** The rwlocks section: the writers' and the stream's readers' ttl. */
  rwlockTtlMs: number;
  /** Acquires of each kind (shared on a free lock, shared joining, exclusive) per latency profile. */
  rwlockLatencyCount: number;
  /** Handovers from readers to a waiting writer per latency profile, and the readers of each. */
  rwlockHandoverTrials: number;
  rwlockHandoverReaders: number;
  /** Writers in a steady stream of readers per latency profile. */
  rwlockStarvationTrials: number;
}

export const FULL: Plan = {
  sequentialCount: 600,
  concurrentCount: 2_000,
  warmupCount: 2_000,
  peerCount: 1_000,
  failoverTrials: 32,
  handoverTrials: 20,
  handoverTrialsOther: 10,
  handoverBaselineTrials: 10,
  pauseTrials: 10,
  electionTtlMs: 2_000,
  costTtlMs: 3_000,
  costTerms: 20,
  coldStartRuns: 7,
  epochCount: 1_000,
  bundleImportRuns: 11,
  rollingDeploys: 20,
  rollingDeploysOther: 3,
  rollingDeploysWithoutPriorities: 5,
  groupPartitions: 64,
  groupRounds: 1,
  groupSteadyTtls: 5,
  groupSteadyTtlsOther: 1,
  // The SDK's default ttl; 10 ttls down is 150 s, the section about 3.5 minutes.
  regionsTtlMs: 15_000,
  regionsHolders: 12,
  regionsOutageTtls: 10,
  rwlockTtlMs: 2_000,
  rwlockLatencyCount: 500,
  rwlockHandoverTrials: 20,
  rwlockHandoverReaders: 4,
  rwlockStarvationTrials: 10,
  scale: [
    { leases: 1_000, ttlMs: 60_000, windowMs: 60_000 },
    { leases: 10_000, ttlMs: 300_000, windowMs: 100_000 },
    { leases: 1_000, ttlMs: 60_000, windowMs: 60_000, batch: true },
    { leases: 10_000, ttlMs: 300_000, windowMs: 100_000, batch: true },
    // The longest ttl, so that DynamoDB Local keeps up: 83 renewals a second, a 20-minute ramp.
    { leases: 100_000, ttlMs: 3_600_000, windowMs: 300_000 },
    { leases: 100_000, ttlMs: 3_600_000, windowMs: 300_000, batch: true },
  ],
};

export const QUICK: Plan = {
  sequentialCount: 100,
  concurrentCount: 320,
  warmupCount: 300,
  peerCount: 200,
  failoverTrials: 6,
  handoverTrials: 6,
  handoverTrialsOther: 3,
  handoverBaselineTrials: 3,
  pauseTrials: 3,
  electionTtlMs: 2_000,
  costTtlMs: 3_000,
  costTerms: 5,
  coldStartRuns: 3,
  epochCount: 200,
  bundleImportRuns: 5,
  rollingDeploys: 3,
  rollingDeploysOther: 1,
  rollingDeploysWithoutPriorities: 1,
  groupPartitions: 64,
  groupRounds: 1,
  groupSteadyTtls: 3,
  groupSteadyTtlsOther: 1,
  // 5 s rather than less: a renewal then still has over a second per Region on a loaded 2-core machine.
  regionsTtlMs: 5_000,
  regionsHolders: 6,
  regionsOutageTtls: 10,
  rwlockTtlMs: 2_000,
  rwlockLatencyCount: 100,
  rwlockHandoverTrials: 6,
  rwlockHandoverReaders: 4,
  rwlockStarvationTrials: 3,
  scale: [
    { leases: 1_000, ttlMs: 30_000, windowMs: 30_000 },
    { leases: 1_000, ttlMs: 30_000, windowMs: 30_000, batch: true },
  ],
};
