import { CfnOutput, Stack, type App, type StackProps } from 'aws-cdk-lib';
import { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { defaultSemaphoreTableName } from '../functions/config.js';
import { DEFAULT_GLOBAL_TABLE_NAME, DEFAULT_PLACEMENT, GlobalLeaseTables, validatePlacement, type MultiRegionPlacement } from './global-lease-tables.js';
import { LeaseService, type LeaseServiceProps } from './lease-service.js';
import { applyRoleGrants, type RoleGrant } from './leasehold-stack.js';
import { ReplicaStreamArn } from './replica-stream.js';
import { TableSweeper } from './table-sweeper.js';

/**
 * leasehold in three Regions: one stack with the MRSC global tables (in the first replica Region),
 * and in each Region that holds a replica a stack with a LeaseService in its multi-Region mode
 * (`tables`: that Region's replicas), the table sweeper, and the outputs clients need.
 *
 *   {prefix}-tables        GlobalLeaseTables: lease and semaphore tables, replicas, witness
 *   {prefix}-{region}      for each replica Region: HTTP API, functions, watch, alarms, sweeper
 *
 * No stack references another's resources: the replicas are found by their fixed names (a replica
 * has its global table's name), and the stream of each replica is read in its own Region at deploy
 * time (replica-stream.ts). The Region stacks only depend on the tables' stack, so `cdk deploy
 * --all` creates the tables first. Grants are the same in every Region.
 */

/** The service settings each Region's LeaseService takes; the tables' settings belong to GlobalLeaseTables. */
export type RegionalServiceProps = Omit<LeaseServiceProps, 'alarmTopic' | 'tables' | 'tableRemovalPolicy' | 'deletionProtection' | 'encryptionKey'>;

export interface MultiRegionLeaseholdProps {
  /** @default us-east-1, us-east-2, us-west-2, three replicas (DEFAULT_PLACEMENT) */
  readonly placement?: MultiRegionPlacement;
  /** The account of every stack. @default the CLI's (`CDK_DEFAULT_ACCOUNT`) */
  readonly account?: string;
  /** The prefix of the stack names. @default 'Leasehold' */
  readonly stackNamePrefix?: string;
  /** The lease table's name, the same in every Region. @default 'leasehold-leases' */
  readonly tableName?: string;
  /** Deletion protection on the replicas. @default true */
  readonly deletionProtection?: boolean;
  /** Settings of each Region's LeaseService. @default LeaseService's defaults */
  readonly service?: RegionalServiceProps;
  /**
   * The name of an SNS topic that exists in every replica Region: each Region's alarms go to its
   * own Region's topic (an alarm can only notify a topic of its Region).
   * @default no alarm actions
   */
  readonly alarmTopicName?: string;
  /** Roles to grant access to, in every Region. @default none */
  readonly grants?: readonly RoleGrant[];
}

export interface MultiRegionLeasehold {
  readonly tables: LeaseholdTablesStack;
  /** Each replica Region's stack, in the placement's order (the clients' order of preference). */
  readonly regions: readonly LeaseholdRegionStack[];
}

/** Adds the multi-Region deployment's stacks to `app`. */
export function createMultiRegionLeasehold(app: App, props: MultiRegionLeaseholdProps = {}): MultiRegionLeasehold {
  const placement = props.placement ?? DEFAULT_PLACEMENT;
  validatePlacement(placement);
  const prefix = props.stackNamePrefix ?? 'Leasehold';
  const tableName = props.tableName ?? DEFAULT_GLOBAL_TABLE_NAME;
  const account = props.account ?? process.env.CDK_DEFAULT_ACCOUNT;
  const tables = new LeaseholdTablesStack(app, `${prefix}-tables`, {
    env: { account, region: placement.replicaRegions[0] },
    description: 'leasehold: the lease and semaphore tables, DynamoDB global tables with multi-Region strong consistency',
    placement,
    tableName,
    deletionProtection: props.deletionProtection,
  });
  const regions = placement.replicaRegions.map((region, i) => {
    const stack = new LeaseholdRegionStack(app, `${prefix}-${region}`, {
      env: { account, region },
      description: `leasehold in ${region}: API, functions, watch and alarms on this Region's replica of the global tables`,
      tableName,
      // Spread over the day, so some Region sweeps every few hours while any one is up.
      sweepHourUtc: (3 + Math.floor((i * 24) / placement.replicaRegions.length)) % 24,
      service: props.service,
      alarmTopicName: props.alarmTopicName,
      grants: props.grants,
    });
    stack.addStackDependency(tables, 'the replicas must exist before the API that writes them');
    return stack;
  });
  return { tables, regions };
}

export interface LeaseholdTablesStackProps extends StackProps {
  readonly placement: MultiRegionPlacement;
  readonly tableName: string;
  readonly deletionProtection?: boolean | undefined;
}

/** The global tables, in the first replica Region. */
export class LeaseholdTablesStack extends Stack {
  readonly tables: GlobalLeaseTables;

  constructor(scope: Construct, id: string, props: LeaseholdTablesStackProps) {
    super(scope, id, props);
    this.tables = new GlobalLeaseTables(this, 'Tables', {
      placement: props.placement,
      tableName: props.tableName,
      ...(props.deletionProtection === undefined ? {} : { deletionProtection: props.deletionProtection }),
    });
    new CfnOutput(this, 'TableName', { value: props.tableName, description: 'The lease table, the same name in every replica Region (retained when the stack is deleted)' });
    new CfnOutput(this, 'ReplicaRegions', { value: props.placement.replicaRegions.join(','), description: 'The Regions with a replica and an API' });
    if (props.placement.witnessRegion !== undefined) {
      new CfnOutput(this, 'WitnessRegion', { value: props.placement.witnessRegion, description: 'The witness Region (no replica, no API)' });
    }
  }
}

export interface LeaseholdRegionStackProps extends StackProps {
  /** The lease table's name (the global table's, hence its replica's here). */
  readonly tableName: string;
  /** The hour (UTC) of this Region's daily table sweep. */
  readonly sweepHourUtc: number;
  readonly service?: RegionalServiceProps | undefined;
  readonly alarmTopicName?: string | undefined;
  readonly grants?: readonly RoleGrant[] | undefined;
}

/** One Region's API on its replica of the global tables. */
export class LeaseholdRegionStack extends Stack {
  readonly service: LeaseService;
  readonly sweeper: TableSweeper;
  /** The deploy-time lookup of the lease table replica's stream; undefined without the watch. */
  readonly replicaStream: ReplicaStreamArn | undefined;

  constructor(scope: Construct, id: string, props: LeaseholdRegionStackProps) {
    super(scope, id, props);
    const logRetention = props.service?.logRetention ?? RetentionDays.ONE_MONTH;
    const watch = props.service?.watch !== false;
    this.replicaStream = watch ? new ReplicaStreamArn(this, 'ReplicaStream', { tableName: props.tableName, logRetention }) : undefined;
    // Imported by name: the ARN is this Region's (`arn:aws:dynamodb:{this region}:…:table/{name}`),
    // so every grant below is on this Region's replica only.
    const leases = TableV2.fromTableAttributes(this, 'LeaseTableReplica', {
      tableName: props.tableName,
      grantIndexPermissions: true,
      ...(this.replicaStream ? { tableStreamArn: this.replicaStream.streamArn } : {}),
    });
    const semaphores = TableV2.fromTableAttributes(this, 'SemaphoreTableReplica', { tableName: defaultSemaphoreTableName(props.tableName) });
    const alarmTopic = props.alarmTopicName
      ? Topic.fromTopicArn(this, 'AlarmTopic', this.formatArn({ service: 'sns', resource: props.alarmTopicName }))
      : undefined;
    this.service = new LeaseService(this, 'Leases', { ...props.service, alarmTopic, tables: { leases, semaphores } });
    this.sweeper = new TableSweeper(this, 'Sweeper', {
      leaseTable: leases,
      semaphoreTable: semaphores,
      hourUtc: props.sweepHourUtc,
      logRetention,
      ...(props.service?.serviceName === undefined ? {} : { serviceName: props.service.serviceName }),
    });
    applyRoleGrants(this, this.service, props.grants ?? []);

    new CfnOutput(this, 'ApiUrl', {
      value: this.service.url,
      description: `Base URL of the leasehold API in ${this.region} (IAM auth: sign requests with SigV4, service execute-api, Region ${this.region})`,
    });
    new CfnOutput(this, 'TableName', { value: props.tableName, description: 'The lease table (this Region\'s replica)' });
    if (this.service.watchUrl !== undefined) {
      new CfnOutput(this, 'WatchUrl', {
        value: this.service.watchUrl,
        description: `WebSocket URL of the leasehold watch in ${this.region} (IAM auth on $connect)`,
      });
    }
  }
}
