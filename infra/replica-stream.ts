import { NestedStack, Stack } from 'aws-cdk-lib';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsCustomResource, PhysicalResourceId, type AwsSdkCall } from 'aws-cdk-lib/custom-resources';
import type { Construct } from 'constructs';
import { acknowledgeFunctionFindings } from './service-function.js';

/** The field of DescribeTable's answer that holds the stream of the Region's replica. */
const STREAM_ARN_FIELD = 'Table.LatestStreamArn';

/**
 * The stream ARN of this Region's replica of a global table, read at deploy time. The watch's event
 * source mapping needs the stream's full ARN, which ends in a label DynamoDB chooses when it
 * creates the replica; only the global table's own stack (in another Region) sees it as an
 * attribute, and CloudFormation cannot reference across Regions. So a DescribeTable in this Region
 * reads it (a custom resource, on create and on every update of the stack's settings).
 *
 * A nested stack of its own: aws-cdk-lib runs every `AwsCustomResource` of a stack in one shared
 * function, with the role of the first one created, and the watch's grant map (watch-grant-map.ts)
 * brings its own; apart, each keeps its role and its one permission.
 */
export class ReplicaStreamArn extends NestedStack {
  /** `arn:aws:dynamodb:{region}:{account}:table/{name}/stream/{label}` */
  readonly streamArn: string;

  constructor(scope: Construct, id: string, props: { tableName: string; logRetention: RetentionDays }) {
    super(scope, id, { description: `leasehold: the stream ARN of ${props.tableName}'s replica in this Region` });
    const tableArn = Stack.of(this).formatArn({ service: 'dynamodb', resource: 'table', resourceName: props.tableName });
    const logGroup = new LogGroup(this, 'LookupLogs', { retention: props.logRetention });
    const role = new Role(this, 'LookupRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: 'leasehold: reads the stream ARN of this Region\'s lease table replica at deploy time',
    });
    logGroup.grantWrite(role);
    role.addToPolicy(new PolicyStatement({ actions: ['dynamodb:DescribeTable'], resources: [tableArn] }));
    const describe: AwsSdkCall = {
      service: 'DynamoDB',
      action: 'DescribeTable',
      parameters: { TableName: props.tableName },
      physicalResourceId: PhysicalResourceId.fromResponse(STREAM_ARN_FIELD),
      outputPaths: [STREAM_ARN_FIELD],
    };
    const lookup = new AwsCustomResource(this, 'Lookup', {
      resourceType: 'Custom::LeaseholdReplicaStream',
      onCreate: describe,
      onUpdate: describe,
      role,
      logGroup,
      memorySize: 256,
      installLatestAwsSdk: false,
    });
    const provider = this.node.tryFindChild(`AWS${AwsCustomResource.PROVIDER_FUNCTION_UUID.replaceAll('-', '')}`);
    if (provider !== undefined) acknowledgeFunctionFindings(provider);
    this.streamArn = lookup.getResponseField(STREAM_ARN_FIELD);
  }
}
