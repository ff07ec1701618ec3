import type { BundleResult } from './bundle.js';
import type { ColdStartRow } from './cold-start.js';
import type { Configuration, Configured } from './configurations.js';
import type { CostMeasurement } from './cost.js';
import type { FailoverTrial, HandoverTrial } from './elections.js';
import type { EpochFencingResult } from './result-types.js';
import type { GroupsResult } from './groups.js';
import type { GroupsEpochResult } from './groups-epoch.js';
import type { LatencyCell, PeerLatency } from './latency.js';
import type { MachineInfo } from './machine.js';
import type { PauseTrial } from './pause.js';
import type { RegionsResult } from './regions.js';
import type { RwlocksResult } from './report-rwlocks.js';
import type { RollingDeploy } from './rolling-deploy.js';
import type { ScaleResult } from './scale.js';

/** The results object every bench section fills in and `npm run bench` writes as JSON. */

export interface FailoverSystem {
  label: string;
  system: string;
  ttlMs: number;
  trials: FailoverTrial[];
  /** Trials repeated with new processes because something else disturbed them (see elections.ts). */
  disturbances?: string[];
  skipped?: string;
  error?: string;
}

/** One variant of the handover section under one configuration, in one run (the configuration and run absent on rows that are not part of the dimension). */
export interface HandoverVariant extends Configured {
  label: string;
  system: string;
  mode: 'resign' | 'handoff';
  watch: 'none' | 'sdk' | 'n/a';
  trials: HandoverTrial[];
  disturbances?: string[];
  note?: string;
  skipped?: string;
  error?: string;
}

export interface PauseSystem {
  label: string;
  system: string;
  ttlMs: number;
  trials: PauseTrial[];
  disturbances?: string[];
  error?: string;
}

/** Section 10: rolling deploys of five candidates, with or without priorities, under one configuration, in one run. */
export interface RollingDeployVariant extends Configured {
  priorities: boolean;
  ttlMs: number;
  candidates: number;
  deploys: RollingDeploy[];
  disturbances?: string[];
  error?: string;
}

/** A section of this report that was measured by an earlier full run (`--only` carries the others over). */
export interface CarriedSection {
  section: string;
  startedAt: string;
  command: string;
  /** The CPU of the machine that run was on (older entries lack it). */
  cpuModel?: string;
}

export interface BenchResults {
  version: 1;
  mode: 'quick' | 'full';
  startedAt: string;
  finishedAt?: string;
  durationSec?: number;
  command: string;
  /** `--repeat`: how many runs of the handover, rolling and groups sections this one made (absent: 1). */
  repeat?: number;
  /** The configurations those sections were measured under (absent: local, stream only). */
  configurations?: Configuration[];
  machine: MachineInfo;
  setup: string[];
  peers: { etcd?: string; redis?: string; lockClient?: string; skipped: string[]; installed: string[] };
  latency?: { sequentialCount: number; concurrentCount: number; cells: LatencyCell[] };
  peerLatency?: PeerLatency[];
  failover?: FailoverSystem[];
  handover?: HandoverVariant[];
  cost?: CostMeasurement;
  coldStart?: ColdStartRow[];
  scale?: ScaleResult[];
  epoch?: EpochFencingResult;
  /** Section 8: the SDK's Lambda bundle size and import time. */
  bundle?: BundleResult;
  pause?: PauseSystem[];
  rolling?: RollingDeployVariant[];
  /**
   * Section 11: a lease group of 64 partitions: start, join, kill, leave; one entry per
   * configuration and run (older results hold one object, read as a list of one: results-file.ts).
   */
  groups?: GroupsResult[];
  /** Section 11b: the lease group with and without epoch fencing per partition, on the headline configuration's server. */
  groupsEpoch?: GroupsEpochResult;
  /** Section 12: one of three Regions down for 10 ttls: leases kept, renewals through another Region, a crash failover with the Region. */
  regions?: RegionsResult;
  /** Section 13: shared and exclusive leases (rwlocks): acquire latency, handover to a waiting writer, a writer's wait among readers, write units per renewal. */
  rwlocks?: RwlocksResult;
  /** Sections copied from the previous full run's JSON because this run measured only others. */
  carriedOver?: CarriedSection[];
  /** Sections that failed, with the error message: the rest of the run still reports. */
  errors: Record<string, string>;
}
