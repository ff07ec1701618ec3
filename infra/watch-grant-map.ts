import { Lazy, Names, Stack } from 'aws-cdk-lib';
import { PolicyStatement, Role, ServicePrincipal, type IPrincipal } from 'aws-cdk-lib/aws-iam';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsCustomResource, PhysicalResourceId, type AwsSdkCall } from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { SUBSCRIPTION_TABLE_SCHEMA } from '../functions/watch/subscriptions.js';
import { EVERY_LEASE, WATCH_GRANTS_PARTITION, WATCH_GRANT_ATTRIBUTES } from '../functions/watch/watch-grants.js';
import { acknowledgeFunctionFindings, grantTableKey } from './service-function.js';

/**
 * Publishes who may watch which leases, for the watch's `$connect` and `subscribe`
 * (functions/watch/watch-grants.ts): one item per granted principal in the subscriptions table,
 * `{ pk: 'grants', sk: <principal's construct id>, principalArn, prefixes }`, written by an
 * `AwsCustomResource` (a PutItem on create and update, a DeleteItem on delete).
 *
 * Why items in the subscriptions table, written at deploy time:
 * - API Gateway's IAM auth gives `$connect` the caller's ARN, never its policy, so the prefixes
 *   must be published somewhere the functions can read.
 * - Role ARNs are often deploy-time tokens (a role created in the same app), unknown at synth: the
 *   map cannot be a string built by the construct. A custom resource gets the resolved values
 *   from CloudFormation.
 * - One item per principal has no size limit worth the name (400 KB each, any number of them),
 *   where the Lambda environment holds 4 KB in all and an SSM parameter 4 KB (8 KB advanced).
 * - The table is already the one the `$connect` function reads and writes: one Query of one
 *   partition at cold start, then cached per container (WATCH_GRANTS_CACHE_MS), no extra client
 *   in the bundle and no extra service to grant or throttle.
 */
export class WatchGrantMap extends Construct {
  private readonly prefixesByPrincipal = new Map<IPrincipal, Set<string>>();
  private publisher: { role: Role; logGroup: LogGroup } | undefined;

  constructor(
    scope: Construct,
    id: string,
    private readonly props: { table: ITable; encryptionKey: IKey | undefined; logRetention: RetentionDays },
  ) {
    super(scope, id);
  }

  /**
   * Lets `principal` watch lease names starting with `prefix` (EVERY_LEASE: all of them), in
   * addition to what it may watch already. Returns false, publishing nothing, for a principal
   * that is not an IAM role or user: the watch can only tell callers apart by their ARN.
   */
  add(principal: IPrincipal, prefix: string): boolean {
    const existing = this.prefixesByPrincipal.get(principal);
    if (existing !== undefined) {
      existing.add(prefix);
      return true;
    }
    const principalArn = principalArnOf(principal);
    if (principalArn === undefined || !Construct.isConstruct(principal)) return false;
    const prefixes = new Set([prefix]);
    this.prefixesByPrincipal.set(principal, prefixes);

    const grantId = Names.uniqueId(principal);
    const key = { [SUBSCRIPTION_TABLE_SCHEMA.partitionKey]: { S: WATCH_GRANTS_PARTITION }, [SUBSCRIPTION_TABLE_SCHEMA.sortKey]: { S: grantId } };
    const put: AwsSdkCall = {
      service: 'DynamoDB',
      action: 'PutItem',
      parameters: {
        TableName: this.props.table.tableName,
        Item: {
          ...key,
          // A token when the role is created in the same app: CloudFormation resolves it.
          [WATCH_GRANT_ATTRIBUTES.principalArn]: { S: principalArn },
          // Lazy: grants made after this one (for the same principal) still land in this item.
          [WATCH_GRANT_ATTRIBUTES.prefixes]: { L: Lazy.any({ produce: () => publishedPrefixes(prefixes).map((p) => ({ S: p })) }) },
        },
      },
      physicalResourceId: PhysicalResourceId.of(`${WATCH_GRANTS_PARTITION}/${grantId}`),
    };
    new AwsCustomResource(this, `Grant${grantId}`, {
      resourceType: 'Custom::LeaseholdWatchGrant',
      onCreate: put,
      onUpdate: put,
      onDelete: { service: 'DynamoDB', action: 'DeleteItem', parameters: { TableName: this.props.table.tableName, Key: key } },
      ...this.publisherSettings(),
      // One small SDK call per deploy and grant (Serverless-LambdaDefaultMemorySize wants it explicit).
      memorySize: 256,
      // The SDK inside the handler asset: nothing is downloaded at deploy time.
      installLatestAwsSdk: false,
    });
    this.acknowledgeProviderFindings();
    return true;
  }

  /** The prefixes published for a principal (sorted), for tests and docs. */
  prefixesOf(principal: IPrincipal): string[] | undefined {
    const prefixes = this.prefixesByPrincipal.get(principal);
    return prefixes === undefined ? undefined : publishedPrefixes(prefixes);
  }

  /**
   * The role and log group of the custom resources' function, made with the first grant (a
   * service without watch grants has neither). Our own role rather than the managed basic
   * execution role the function would get: its log group, and grant items in this one table.
   */
  private publisherSettings(): { role: Role; logGroup: LogGroup } {
    if (this.publisher === undefined) {
      const logGroup = new LogGroup(this, 'PublisherLogs', { retention: this.props.logRetention });
      const role = new Role(this, 'PublisherRole', {
        assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
        description: 'leasehold watch: writes the watch grants into the subscriptions table at deploy time',
      });
      logGroup.grantWrite(role);
      // Only the grants' own partition: the subscriptions and connection records are the watch functions'.
      role.addToPolicy(
        new PolicyStatement({
          actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem'],
          resources: [this.props.table.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [WATCH_GRANTS_PARTITION] } },
        }),
      );
      grantTableKey(this.props.encryptionKey, role, true);
      this.publisher = { role, logGroup };
    }
    return this.publisher;
  }

  /** The custom resources share one provider function per stack, created by aws-cdk-lib. */
  private acknowledgeProviderFindings(): void {
    const provider = Stack.of(this).node.tryFindChild(`AWS${AwsCustomResource.PROVIDER_FUNCTION_UUID.replaceAll('-', '')}`);
    if (provider === undefined) return;
    acknowledgeFunctionFindings(provider);
  }
}

/** Every lease covers every prefix: such a grant is published as EVERY_LEASE alone. */
function publishedPrefixes(prefixes: ReadonlySet<string>): string[] {
  return prefixes.has(EVERY_LEASE) ? [EVERY_LEASE] : [...prefixes].sort();
}

function principalArnOf(principal: IPrincipal): string | undefined {
  const candidate = principal as { roleArn?: unknown; userArn?: unknown };
  if (typeof candidate.roleArn === 'string') return candidate.roleArn;
  if (typeof candidate.userArn === 'string') return candidate.userArn;
  return undefined;
}
