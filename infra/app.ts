import { App } from 'aws-cdk-lib';
import type { LeaseWatchOptions } from './lease-watch.js';
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
 */
const app = new App();
const context = (key: string): unknown => app.node.tryGetContext(`leasehold:${key}`);

new LeaseholdStack(app, String(context('stackName') ?? 'Leasehold'), {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: 'leasehold: serverless leases and leader election with fencing tokens',
  alarmTopicArn: optionalString(context('alarmTopicArn')),
  grants: parseGrants(context('grants')),
  service: {
    rateLimit: optionalNumber(context('rateLimit'), 'rateLimit'),
    burstLimit: optionalNumber(context('burstLimit'), 'burstLimit'),
    watch: watchSetting(
      optionalBoolean(context('watch'), 'watch'),
      optionalBoolean(context('watchRenewedEvents'), 'watchRenewedEvents'),
      optionalBoolean(context('watchAccessLogs'), 'watchAccessLogs'),
    ),
  },
});

function watchSetting(
  watch: boolean | undefined,
  renewedEvents: boolean | undefined,
  accessLogs: boolean | undefined,
): boolean | LeaseWatchOptions | undefined {
  if (watch === false || (renewedEvents === undefined && accessLogs === undefined)) return watch;
  return { ...(renewedEvents === undefined ? {} : { renewedEvents }), ...(accessLogs === undefined ? {} : { accessLogs }) };
}

function optionalString(value: unknown): string | undefined {
  return value === undefined || value === null || value === '' ? undefined : String(value);
}

function optionalNumber(value: unknown, key: string): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`Expected context \`leasehold:${key}\` to be a number, got "${String(value)}".`);
  return n;
}

function optionalBoolean(value: unknown, key: string): boolean | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(`Expected context \`leasehold:${key}\` to be true or false, got "${String(value)}".`);
}
