import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import { AttributeType, Billing, MultiRegionConsistency, ProjectionType, StreamViewType, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { defaultSemaphoreTableName } from '../functions/config.js';
import { LEASE_TABLE_SCHEMA, SEMAPHORE_TABLE_SCHEMA } from '../functions/lease-table.js';

/**
 * The Regions of a multi-Region deployment: where the tables are created, where their replicas and
 * the witness are. MRSC takes exactly three Regions of one Region set: three replicas, or two
 * replicas and a witness (a Region that takes part in every write's quorum but holds no readable
 * replica, so no API runs there).
 */
export interface MultiRegionPlacement {
  /**
   * The Regions that hold a replica, each with its own API. The first is where the global tables'
   * stack is deployed (CloudFormation manages every replica from there).
   * Three Regions, or two with `witnessRegion`.
   */
  readonly replicaRegions: readonly string[];
  /** The third Region, as a witness. @default none: three replicas */
  readonly witnessRegion?: string;
}

/** The Region sets of MRSC (AWS::DynamoDB::GlobalTable GlobalTableWitness; aws-cdk-lib checks the same). */
export const MRSC_REGION_SETS: Readonly<Record<'US' | 'EU' | 'AP', readonly string[]>> = {
  US: ['us-east-1', 'us-east-2', 'us-west-2'],
  EU: ['eu-west-1', 'eu-west-2', 'eu-west-3', 'eu-central-1'],
  AP: ['ap-northeast-1', 'ap-northeast-2', 'ap-northeast-3'],
};

/** The default placement: the US Region set, three replicas. */
export const DEFAULT_PLACEMENT: MultiRegionPlacement = { replicaRegions: MRSC_REGION_SETS.US };

/** The lease table's name in every Region (a replica has the global table's name). */
export const DEFAULT_GLOBAL_TABLE_NAME = 'leasehold-leases';

/**
 * Refuses a placement MRSC cannot have, at synthesis, with a message that says which rule it breaks:
 * three distinct Regions in all, of one Region set, two or three of them replicas.
 */
export function validatePlacement(placement: MultiRegionPlacement): void {
  const { replicaRegions, witnessRegion } = placement;
  const all = [...replicaRegions, ...(witnessRegion === undefined ? [] : [witnessRegion])];
  const expected = witnessRegion === undefined ? 3 : 2;
  if (replicaRegions.length !== expected) {
    throw new Error(
      `Expected ${expected} replica Regions${witnessRegion === undefined ? '' : ` with the witness ${witnessRegion}`}, got ${replicaRegions.length} (${replicaRegions.join(', ')}): ` +
        'MRSC takes three Regions, three replicas or two replicas and a witness.',
    );
  }
  if (new Set(all).size !== all.length) throw new Error(`Expected three different Regions, got ${all.join(', ')}.`);
  const set = Object.entries(MRSC_REGION_SETS).find(([, regions]) => all.every((region) => regions.includes(region)));
  if (set === undefined) {
    const sets = Object.entries(MRSC_REGION_SETS).map(([name, regions]) => `${name}: ${regions.join(', ')}`).join('; ');
    throw new Error(`Expected the Regions ${all.join(', ')} to be in one MRSC Region set (${sets}).`);
  }
}

export interface GlobalLeaseTablesProps {
  readonly placement: MultiRegionPlacement;
  /**
   * The lease table's name, the same in every Region; the semaphore table's is this with
   * `-semaphores` (the functions' own default, functions/config.ts). Fixed names are how each
   * Region's stack finds its replica without a cross-Region reference.
   * @default 'leasehold-leases'
   */
  readonly tableName?: string;
  /**
   * DynamoDB deletion protection on every replica. The tables are always retained when their stack
   * is deleted: deleting them restarts every fencing token from the clock (see
   * functions/lease-store.ts).
   * @default true
   */
  readonly deletionProtection?: boolean;
}

/**
 * The lease and semaphore tables as DynamoDB global tables with multi-Region strong consistency
 * (MRSC), created in the stack of `placement.replicaRegions[0]` with a replica in each other
 * replica Region and, optionally, a witness. A strongly consistent read or a conditional write in
 * any Region sees the latest write made in any Region, so each Region's functions can grant and
 * renew against their own replica and still never grant one lease twice.
 *
 * What MRSC does not support, and what these tables do instead:
 * - Time to Live: MRSC tables cannot configure TTL deletion, so no TTL is set; each Region's stack
 *   runs the table sweeper (infra/table-sweeper.ts), which deletes the items whose `expireItemAt`
 *   has passed, as TTL would have.
 * - Transactions: not supported on MRSC; leasehold's routes never use them on these tables.
 * - Local secondary indexes: not supported; leasehold has none. The group index is a global one.
 * - Streams: not used by MRSC for replication, but may be enabled; every replica's stream carries
 *   the same records in the same order, so each Region's watch consumes its own replica's stream
 *   and hears of writes made through every Region. Both tables get NEW_AND_OLD_IMAGES (what
 *   aws-cdk-lib gives a global table with replicas): only the lease table's is read.
 * - The consistency mode is fixed at creation, and a table becomes MRSC only while empty: an
 *   existing single-Region lease table cannot be converted; a multi-Region deployment starts with
 *   new tables (docs/multi-region.md).
 */
export class GlobalLeaseTables extends Construct {
  readonly leaseTable: TableV2;
  readonly semaphoreTable: TableV2;
  readonly placement: MultiRegionPlacement;

  constructor(scope: Construct, id: string, props: GlobalLeaseTablesProps) {
    super(scope, id);
    validatePlacement(props.placement);
    const [home, ...replicas] = props.placement.replicaRegions;
    const stackRegion = Stack.of(this).region;
    if (stackRegion !== home) {
      throw new Error(`GlobalLeaseTables: expected a stack in ${home} (the first replica Region), got ${stackRegion}.`);
    }
    this.placement = props.placement;
    const tableName = props.tableName ?? DEFAULT_GLOBAL_TABLE_NAME;
    const common = {
      billing: Billing.onDemand(),
      multiRegionConsistency: MultiRegionConsistency.STRONG,
      replicas: replicas.map((region) => ({ region })),
      ...(props.placement.witnessRegion === undefined ? {} : { witnessRegion: props.placement.witnessRegion }),
      // The same key as the single-Region tables: aws/dynamodb in each Region.
      encryption: TableEncryptionV2.awsManagedKey(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: props.deletionProtection ?? true,
      removalPolicy: RemovalPolicy.RETAIN,
      dynamoStream: StreamViewType.NEW_AND_OLD_IMAGES,
    };
    const groupIndex = LEASE_TABLE_SCHEMA.groupIndex;
    this.leaseTable = new TableV2(this, 'LeaseTable', {
      ...common,
      tableName,
      partitionKey: { name: LEASE_TABLE_SCHEMA.partitionKey, type: AttributeType.STRING },
      globalSecondaryIndexes: [
        {
          indexName: groupIndex.indexName,
          partitionKey: { name: groupIndex.partitionKey, type: AttributeType.STRING },
          sortKey: { name: groupIndex.sortKey, type: AttributeType.STRING },
          projectionType: ProjectionType.KEYS_ONLY,
        },
      ],
    });
    this.semaphoreTable = new TableV2(this, 'SemaphoreTable', {
      ...common,
      tableName: defaultSemaphoreTableName(tableName),
      partitionKey: { name: SEMAPHORE_TABLE_SCHEMA.partitionKey, type: AttributeType.STRING },
    });
  }
}
