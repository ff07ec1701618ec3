import { Stack, Validations } from 'aws-cdk-lib';
import type { Construct } from 'constructs';

/**
 * Acknowledges cdk-nag's AwsSolutions-IAM5 finding for one wildcard resource of a policy, next to
 * the role that holds it. cdk-nag 3 names each such finding after the resource, flattened the way
 * it prints it (`Resource::arn:<AWS::Partition>:execute-api:…:<LogicalId>/v1/POST/@connections/*`),
 * and only an acknowledgement with that exact id covers it: this flattens `resource` the same way.
 */
export function acknowledgeWildcardResource(holder: Construct, resource: string, reason: string): void {
  const flat = flattenReference(Stack.of(holder).resolve(resource));
  Validations.of(holder).acknowledge({ id: `AwsSolutions-IAM5[Resource::${flat}]`, reason });
}

/** Fn::Join joined, Ref as `<Id>`, Fn::GetAtt as `<Id.Attribute>` (cdk-nag's notation). */
function flattenReference(value: unknown): string {
  if (typeof value === 'string') return value;
  const node = value as Record<string, unknown>;
  if (Array.isArray(node['Fn::Join'])) {
    const [separator, parts] = node['Fn::Join'] as [string, unknown[]];
    return parts.map(flattenReference).join(separator);
  }
  if (typeof node.Ref === 'string') return `<${node.Ref}>`;
  if (Array.isArray(node['Fn::GetAtt'])) {
    const [id, attribute] = node['Fn::GetAtt'] as [string, string];
    return `<${id}.${attribute}>`;
  }
  return JSON.stringify(value);
}
