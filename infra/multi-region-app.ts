import { App } from 'aws-cdk-lib';
import { contextOf, optionalBoolean, optionalString, serviceSettings } from './app-context.js';
import { DEFAULT_PLACEMENT, type MultiRegionPlacement } from './global-lease-tables.js';
import { parseGrants } from './leasehold-stack.js';
import { createMultiRegionLeasehold } from './multi-region.js';

/**
 * The multi-Region deployment (infra/multi-region.ts) in one command:
 *
 *   npx cdk deploy --all --app 'npx tsx infra/multi-region-app.ts'
 *
 * Settings come from CDK context (`-c key=value`), all optional; the Regions may also come from the
 * environment (context wins):
 *   leasehold:regions        the replica Regions, comma-separated, the first hosting the tables' stack
 *                            (env LEASEHOLD_REGIONS; default us-east-1,us-east-2,us-west-2)
 *   leasehold:witnessRegion  a witness Region; then `regions` names two (env LEASEHOLD_WITNESS_REGION)
 *   leasehold:stackName      prefix of the stack names (default "Leasehold": Leasehold-tables,
 *                            Leasehold-us-east-1, …)
 *   leasehold:tableName      the lease table's name in every Region (default "leasehold-leases"; the
 *                            semaphore table is this with "-semaphores")
 *   leasehold:deletionProtection  false to leave the replicas unprotected (default true)
 *   leasehold:alarmTopicName an SNS topic of this name in each replica Region, for its alarms
 *   leasehold:grants, rateLimit, burstLimit, watch, watchRenewedEvents, watchAccessLogs,
 *   leasehold:provisionedConcurrency
 *                            as for the single-Region app (infra/app.ts), applied in every Region
 */
const app = new App();
const context = contextOf(app);

createMultiRegionLeasehold(app, {
  placement: placementFrom(optionalString(context('regions') ?? process.env.LEASEHOLD_REGIONS), optionalString(context('witnessRegion') ?? process.env.LEASEHOLD_WITNESS_REGION)),
  account: process.env.CDK_DEFAULT_ACCOUNT,
  stackNamePrefix: optionalString(context('stackName')),
  tableName: optionalString(context('tableName')),
  deletionProtection: optionalBoolean(context('deletionProtection'), 'deletionProtection'),
  alarmTopicName: optionalString(context('alarmTopicName')),
  grants: parseGrants(context('grants')),
  service: serviceSettings(context),
});

function placementFrom(regions: string | undefined, witnessRegion: string | undefined): MultiRegionPlacement {
  if (regions === undefined && witnessRegion === undefined) return DEFAULT_PLACEMENT;
  if (regions === undefined) throw new Error('Expected `leasehold:regions` (the two replica Regions) with `leasehold:witnessRegion`.');
  const replicaRegions = regions.split(',').map((region) => region.trim()).filter((region) => region !== '');
  return witnessRegion === undefined ? { replicaRegions } : { replicaRegions, witnessRegion };
}
