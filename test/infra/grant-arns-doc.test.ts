import { readFileSync } from 'node:fs';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal, type CfnRole } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { LeaseService } from '../../infra/lease-service.js';
import { ACCOUNT, REGION, invokeArnsOfRole, type CfnTemplate } from './synth-support.js';

// docs/deploy.md lists every ARN each grant method produces; this holds the table to the policies
// the construct really synthesizes, so neither can change without the other.

type GrantMethod = 'grantLeases' | 'grantRead' | 'grantAdmin' | 'grantWatch';
const GRANT_METHODS: readonly GrantMethod[] = ['grantLeases', 'grantRead', 'grantAdmin', 'grantWatch'];
const ARN_START = `arn:aws:execute-api:${REGION}:${ACCOUNT}:`;

/** The doc's table, by grant call (`grantLeases(role, 'billing.')`): the resources after `arn:aws:execute-api:{region}:{account}:`. */
function documentedArns(): Map<string, string[]> {
  const doc = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
  const table = /<!-- grant-arns: begin -->\n([\s\S]*?)<!-- grant-arns: end -->/.exec(doc)?.[1];
  if (table === undefined) throw new Error('docs/deploy.md has no grant-arns table');
  const byCall = new Map<string, string[]>();
  for (const line of table.split('\n').slice(2)) {
    if (line.trim() === '') continue;
    const row = /^\| `([^`]+)` \| `([^`]+)` \|$/.exec(line);
    if (row === null) throw new Error(`Unexpected row in the grant-arns table: ${line}`);
    byCall.set(row[1] as string, [...(byCall.get(row[1] as string) ?? []), row[2] as string].sort());
  }
  return byCall;
}

/** What the construct puts in a role's policy for one grant call, written as the doc writes it. */
function synthesizedArns(method: GrantMethod, namePrefix: string | undefined): string[] {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Grants', { env: { account: ACCOUNT, region: REGION } });
  const service = new LeaseService(stack, 'Leases');
  const role = new Role(stack, 'TaskRole', { assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com') });
  service[method](role, namePrefix);
  const json = Template.fromStack(stack).toJSON() as CfnTemplate;
  return invokeArnsOfRole(json, { logicalId: stack.getLogicalId(role.node.defaultChild as CfnRole) })
    .map((arn) => {
      expect(arn.startsWith(ARN_START), arn).toBe(true);
      return arn.slice(ARN_START.length).replace('{api}', '{apiId}').replace('{watch}', '{watchApiId}');
    })
    .sort();
}

describe("docs/deploy.md's table of the ARNs each grant produces", () => {
  const documented = documentedArns();
  const calls = GRANT_METHODS.flatMap((method) => [undefined, 'billing.'].map((prefix) => ({ method, prefix })));

  it('has a row set for every grant method, with and without a prefix, and nothing else', () => {
    expect([...documented.keys()].sort()).toEqual(calls.map(({ method, prefix }) => `${method}(role${prefix === undefined ? '' : `, '${prefix}'`})`).sort());
  });

  it.each(calls)('lists exactly the ARNs $method produces (prefix: $prefix)', ({ method, prefix }) => {
    expect(documented.get(`${method}(role${prefix === undefined ? '' : `, '${prefix}'`})`)).toEqual(synthesizedArns(method, prefix));
  });

  it("includes the batched handoff under a prefix, POST /v1/prefixes/<prefix>*/handoff, in grantLeases' ARNs", () => {
    expect(documented.get("grantLeases(role, 'billing.')")).toContain('{apiId}/$default/POST/v1/prefixes/billing.*/handoff');
  });
});
