import { Duration, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ENV, SERVICE_NAME } from '../functions/config.js';
import { createServiceFunction } from './service-function.js';

/** What the sweeper's role may do on each table: read it through, and delete one item at a time. */
export const SWEEPER_TABLE_ACTIONS: readonly string[] = ['dynamodb:Scan', 'dynamodb:DeleteItem'];

/**
 * 5 minutes: a sweep reads the table at an eventually consistent Scan's pace and deletes the items
 * idle for a week, one conditional DeleteItem each; it stops reading 20 s before this
 * (functions/handlers/table-sweep.ts) and the next run starts again from the beginning.
 */
export const SWEEPER_TIMEOUT = Duration.minutes(5);

export interface TableSweeperProps {
  /** This Region's replica of the lease table. */
  readonly leaseTable: ITable;
  /** This Region's replica of the semaphore table. */
  readonly semaphoreTable: ITable;
  /** The hour (UTC, 0–23) of the daily run. Regions of one deployment take different hours. */
  readonly hourUtc: number;
  readonly logRetention: RetentionDays;
  /** `POWERTOOLS_SERVICE_NAME` of the function. @default 'leasehold' */
  readonly serviceName?: string;
}

/**
 * TTL for tables that cannot have it (MRSC global tables): once a day a function deletes the items
 * of the lease and semaphore tables whose `expireItemAt` has passed (functions/table-sweeper.ts),
 * in this Region's replica. Each Region's stack has one, at its own hour, so the tables are swept
 * while any one Region is up; a delete made in one Region is replicated to the others, and a second
 * sweeper finds nothing left to delete.
 */
export class TableSweeper extends Construct {
  readonly function: NodejsFunction;
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: TableSweeperProps) {
    super(scope, id);
    if (!Number.isInteger(props.hourUtc) || props.hourUtc < 0 || props.hourUtc > 23) {
      throw new Error(`Expected the sweeper's hourUtc to be an integer from 0 to 23, got ${props.hourUtc}.`);
    }
    this.function = createServiceFunction(this, {
      handlerId: 'table-sweep',
      idPrefix: 'Sweep',
      description: 'leasehold table sweeper: deletes idle items where DynamoDB TTL cannot',
      memorySize: 256,
      timeout: SWEEPER_TIMEOUT,
      logRetention: props.logRetention,
      environment: {
        [ENV.leaseTable]: props.leaseTable.tableName,
        [ENV.semaphoreTable]: props.semaphoreTable.tableName,
        [ENV.serviceName]: props.serviceName ?? SERVICE_NAME,
      },
      noDeadLetterQueueReason:
        'Invoked asynchronously by a daily schedule: a failed sweep leaves the idle items where they are, and the next ' +
        'run (or another Region\'s) deletes them; a dead-letter queue would hold nothing worth replaying.',
    });
    this.function.addToRolePolicy(
      new PolicyStatement({ actions: [...SWEEPER_TABLE_ACTIONS], resources: [props.leaseTable.tableArn, props.semaphoreTable.tableArn] }),
    );
    this.rule = new Rule(this, 'Schedule', {
      description: 'leasehold: the daily table sweep',
      schedule: Schedule.cron({ minute: '17', hour: String(props.hourUtc) }),
      targets: [new LambdaFunction(this.function, { retryAttempts: 2 })],
    });
    Validations.of(this.rule).acknowledge({
      id: 'Serverless-EventBusDLQ',
      reason:
        'A daily trigger with two retries: a sweep that could not be delivered is replaced by the next one (here or in ' +
        'another Region), and idle items only wait a little longer; a dead-letter queue would hold nothing to replay.',
    });
  }
}
