// The CDK wiring of the nightly job: the function on an EventBridge schedule, its role allowed to take
// leases under `nightly.` (grantLeases) and to write its reports table.
import { fileURLToPath } from 'node:url';
import { Duration, Stack, type StackProps } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { LeaseService } from '../infra/lease-service.js';

export class NightlyReportStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const leases = new LeaseService(this, 'Leases');
    const reports = new Table(this, 'Reports', { partitionKey: { name: 'pk', type: AttributeType.STRING }, billingMode: BillingMode.PAY_PER_REQUEST });

    const job = new NodejsFunction(this, 'NightlyReport', {
      entry: fileURLToPath(new URL('./lambda-nightly-job.ts', import.meta.url)),
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      timeout: Duration.minutes(5), // the lease is capped at what is left of this, less lambdaMarginMs
      environment: { LEASEHOLD_URL: leases.url, REPORTS_TABLE: reports.tableName },
      // The AWS SDK for the job's own DynamoDB writes comes with the runtime; leasehold/lambda is bundled.
      // leasehold/lambda is ESM with no CommonJS inside, so an ESM bundle needs no `createRequire` banner.
      bundling: { format: OutputFormat.ESM, minify: true, externalModules: ['@aws-sdk/*'] },
    });
    leases.grantLeases(job, 'nightly.'); // execute-api:Invoke on the lease routes for names under nightly.
    reports.grantReadWriteData(job);

    // Retries of a failed run (a lost lease, the deadline) are safe: the lease and the fence keep them one at a time.
    new Rule(this, 'EveryNight', { schedule: Schedule.cron({ minute: '0', hour: '2' }), targets: [new LambdaFunction(job, { retryAttempts: 2 })] });
  }
}
