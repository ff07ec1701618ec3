import type { App } from 'aws-cdk-lib';
import type { LeaseWatchOptions } from './lease-watch.js';
import { parseProvisionedConcurrency, validateProvisionedConcurrency, type ProvisionedConcurrency } from './provisioned-concurrency.js';

/**
 * How the CDK apps (app.ts, multi-region-app.ts) read their settings from CDK context (`-c key=value`
 * or cdk.json), each under `leasehold:`: one reader, so the two apps name and check them alike.
 */
export function contextOf(app: App): (key: string) => unknown {
  return (key) => app.node.tryGetContext(`leasehold:${key}`);
}

/**
 * The service settings both apps take: `rateLimit`, `burstLimit`, `watch`, `watchRenewedEvents`,
 * `watchAccessLogs` and `provisionedConcurrency` ("handover" or `route=count,…` with `-c`; an
 * object in cdk.json).
 */
export function serviceSettings(context: (key: string) => unknown) {
  return {
    rateLimit: optionalNumber(context('rateLimit'), 'rateLimit'),
    burstLimit: optionalNumber(context('burstLimit'), 'burstLimit'),
    watch: watchSetting(
      optionalBoolean(context('watch'), 'watch'),
      optionalBoolean(context('watchRenewedEvents'), 'watchRenewedEvents'),
      optionalBoolean(context('watchAccessLogs'), 'watchAccessLogs'),
    ),
    provisionedConcurrency: optionalProvisionedConcurrency(context('provisionedConcurrency')),
  };
}

function optionalProvisionedConcurrency(value: unknown): ProvisionedConcurrency | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const option = 'leasehold:provisionedConcurrency';
  return typeof value === 'string' ? parseProvisionedConcurrency(value, option) : validateProvisionedConcurrency(value, option);
}

function watchSetting(
  watch: boolean | undefined,
  renewedEvents: boolean | undefined,
  accessLogs: boolean | undefined,
): boolean | LeaseWatchOptions | undefined {
  if (watch === false || (renewedEvents === undefined && accessLogs === undefined)) return watch;
  return { ...(renewedEvents === undefined ? {} : { renewedEvents }), ...(accessLogs === undefined ? {} : { accessLogs }) };
}

export function optionalString(value: unknown): string | undefined {
  return value === undefined || value === null || value === '' ? undefined : String(value);
}

export function optionalNumber(value: unknown, key: string): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`Expected context \`leasehold:${key}\` to be a number, got "${String(value)}".`);
  return n;
}

export function optionalBoolean(value: unknown, key: string): boolean | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(`Expected context \`leasehold:${key}\` to be true or false, got "${String(value)}".`);
}
