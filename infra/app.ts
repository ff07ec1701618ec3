import { App } from 'aws-cdk-lib';
import { contextOf, optionalString, serviceSettings } from './app-context.js';
import { LeaseholdStack, parseGrants } from './leasehold-stack.js';

/**
 * `npx cdk deploy` entry: one standalone leasehold stack. Settings come from CDK context
 * (`-c key=value` or cdk.json), all optional:
 *   leasehold:stackName      stack name (default "Leasehold")
 *   leasehold:alarmTopicArn  SNS topic for the alarms
 *   leasehold:rateLimit      API stage rate limit, requests/s (default 200)
 *   leasehold:burstLimit     API stage burst limit, requests (default 400)
 *   leasehold:grants         JSON array of {roleArn, namePrefix?, access?, watch?} (see leasehold-stack.ts)
 *   leasehold:watch          false to leave out the watch (WebSocket push of leader events; default true)
 *   leasehold:watchRenewedEvents  false: the watch never pushes renewed events, and renewals cost it
 *                            nothing (default true)
 *   leasehold:watchAccessLogs  true: access logs on the watch's WebSocket stage; needs the account's API
 *                            Gateway CloudWatch role in this region (default false)
 *   leasehold:provisionedConcurrency  "handover", or route=count pairs (acquire=2,release=1,handoff=1):
 *                            provisioned environments per route function, billed by the hour
 *                            (default none; docs/deploy.md)
 */
const app = new App();
const context = contextOf(app);

new LeaseholdStack(app, String(context('stackName') ?? 'Leasehold'), {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: 'leasehold: serverless leases and leader election with fencing tokens',
  alarmTopicArn: optionalString(context('alarmTopicArn')),
  grants: parseGrants(context('grants')),
  service: serviceSettings(context),
});
