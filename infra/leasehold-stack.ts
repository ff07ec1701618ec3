import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import { Role } from 'aws-cdk-lib/aws-iam';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { LeaseService, type LeaseServiceProps } from './lease-service.js';

/** An existing IAM role (a Lambda function's or an ECS task's) that the stack lets call leasehold. */
export interface RoleGrant {
  roleArn: string;
  /** Only lease names starting with this (and the watch of those only); omit for all names (and list). */
  namePrefix?: string;
  /**
   * 'leases' (default): acquire, renew, release, handoff, describe and the watch (and list when
   * there is no prefix). 'read': describe and the watch (and list when there is no prefix).
   */
  access?: 'leases' | 'read';
  /**
   * Also watch every lease (`grantWatch` without a prefix), beyond `namePrefix`: the role then
   * sees every lease's events (names, holders, tokens). Only meaningful with a `namePrefix`.
   */
  watch?: boolean;
}

export interface LeaseholdStackProps extends StackProps {
  /** Settings of the lease service. @default LeaseService's defaults */
  readonly service?: Omit<LeaseServiceProps, 'alarmTopic'>;
  /** ARN of an SNS topic for the alarms. @default no alarm actions */
  readonly alarmTopicArn?: string;
  /** Roles to grant access to. @default none: grant from your own app with `grantLeases` */
  readonly grants?: readonly RoleGrant[];
}

/** The standalone deployment: one LeaseService; its URL, table name and watch URL as stack outputs. */
export class LeaseholdStack extends Stack {
  readonly service: LeaseService;

  constructor(scope: Construct, id: string, props: LeaseholdStackProps = {}) {
    super(scope, id, props);
    const alarmTopic = props.alarmTopicArn ? Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn) : undefined;
    this.service = new LeaseService(this, 'Leases', { ...props.service, alarmTopic });

    applyRoleGrants(this, this.service, props.grants ?? []);

    new CfnOutput(this, 'ApiUrl', {
      value: this.service.url,
      description: 'Base URL of the leasehold API (IAM auth: sign requests with SigV4, service execute-api)',
    });
    new CfnOutput(this, 'TableName', {
      value: this.service.table.tableName,
      description: 'The lease table (retained when the stack is deleted)',
    });
    if (this.service.watchUrl !== undefined) {
      new CfnOutput(this, 'WatchUrl', {
        value: this.service.watchUrl,
        description: 'WebSocket URL of the leasehold watch (IAM auth on $connect: sign the upgrade request with SigV4, service execute-api)',
      });
    }
  }
}

/** Grants each role its access to `service`; the roles are imported into `stack` as `GrantedRole{i}`. */
export function applyRoleGrants(stack: Stack, service: LeaseService, grants: readonly RoleGrant[]): void {
  grants.forEach((grant, i) => {
    const role = Role.fromRoleArn(stack, `GrantedRole${i}`, grant.roleArn);
    if (grant.access === 'read') {
      service.grantRead(role, grant.namePrefix);
    } else {
      service.grantLeases(role, grant.namePrefix);
    }
    if (grant.watch === true) service.grantWatch(role);
  });
}

/**
 * Reads `grants` from CDK context: a JSON array (a string when given with `-c`), e.g.
 * `[{"roleArn":"arn:aws:iam::123456789012:role/team-a-tasks","namePrefix":"team-a.","watch":true}]`.
 */
export function parseGrants(value: unknown): RoleGrant[] {
  if (value === undefined || value === null || value === '') return [];
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new Error('Expected context `leasehold:grants` to be a JSON array of {roleArn, namePrefix?, access?, watch?}.');
    }
  }
  if (!Array.isArray(parsed)) {
    throw new Error('Expected context `leasehold:grants` to be a JSON array of {roleArn, namePrefix?, access?, watch?}.');
  }
  return parsed.map((item: unknown, i) => {
    const g = item as Record<string, unknown>;
    if (typeof g !== 'object' || g === null || typeof g.roleArn !== 'string' || !/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/.test(g.roleArn)) {
      throw new Error(`Expected \`leasehold:grants[${i}].roleArn\` to be an IAM role ARN (arn:aws:iam::123456789012:role/name).`);
    }
    if (g.namePrefix !== undefined && typeof g.namePrefix !== 'string') {
      throw new Error(`Expected \`leasehold:grants[${i}].namePrefix\` to be a string.`);
    }
    if (g.access !== undefined && g.access !== 'leases' && g.access !== 'read') {
      throw new Error(`Expected \`leasehold:grants[${i}].access\` to be 'leases' or 'read'.`);
    }
    if (g.watch !== undefined && typeof g.watch !== 'boolean') {
      throw new Error(`Expected \`leasehold:grants[${i}].watch\` to be true or false.`);
    }
    const grant: RoleGrant = { roleArn: g.roleArn };
    if (g.namePrefix !== undefined) grant.namePrefix = g.namePrefix as string;
    if (g.access !== undefined) grant.access = g.access as 'leases' | 'read';
    if (g.watch !== undefined) grant.watch = g.watch;
    return grant;
  });
}
