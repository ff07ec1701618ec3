import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  ENV,
  LEGACY_WATCH_RENEWED_ENV,
  METRICS_NAMESPACE,
  SERVICE_NAME,
  readConfig,
  readServiceIdentity,
  readWatchConfig,
  readWatchRenewedEvents,
} from '../../functions/config.js';

describe('handler configuration', () => {
  it('reads the table, region and optional endpoint', () => {
    expect(readConfig({ LEASE_TABLE_NAME: 'leases', AWS_REGION: 'eu-west-1' })).toEqual({
      tableName: 'leases',
      semaphoreTableName: 'leases-semaphores',
      region: 'eu-west-1',
      dynamodbEndpoint: undefined,
    });
  });

  it('reads the semaphore table from SEMAPHORE_TABLE_NAME, else names it after the lease table', () => {
    expect(readConfig({ LEASE_TABLE_NAME: 'leases', SEMAPHORE_TABLE_NAME: 'sems', AWS_REGION: 'x' }).semaphoreTableName).toBe('sems');
    expect(() => readConfig({ LEASE_TABLE_NAME: 'leases', SEMAPHORE_TABLE_NAME: 's/x', AWS_REGION: 'x' })).toThrow(/SEMAPHORE_TABLE_NAME "s\/x" is not a valid table name/);
  });

  it('lists everything that is missing in one message', () => {
    expect(() => readConfig({})).toThrow(ConfigError);
    expect(() => readConfig({})).toThrow(/LEASE_TABLE_NAME.*; AWS_REGION/);
  });

  it('rejects a malformed endpoint and table name', () => {
    expect(() => readConfig({ LEASE_TABLE_NAME: 'a b', AWS_REGION: 'x', DYNAMODB_ENDPOINT: 'localhost:8000' })).toThrow(
      /LEASE_TABLE_NAME "a b" is not a valid table name; DYNAMODB_ENDPOINT "localhost:8000" is not an http\(s\) URL/,
    );
  });
});

describe('watch configuration', () => {
  const complete = { SUBSCRIPTION_TABLE_NAME: 'subs', WEBSOCKET_MANAGEMENT_ENDPOINT: 'https://api.example/v1', AWS_REGION: 'eu-west-1' };

  it('reads the subscriptions table, management endpoint and region, pushes renewed events by default, and expects no direct push', () => {
    expect(readWatchConfig(complete)).toEqual({
      subscriptionTableName: 'subs',
      managementEndpoint: 'https://api.example/v1',
      region: 'eu-west-1',
      dynamodbEndpoint: undefined,
      renewedEvents: true,
      directPush: false,
    });
  });

  it('has the stream consumer skip what the routes pushed with WATCH_DIRECT_PUSH=true, and refuses any other value than true or false', () => {
    expect(readWatchConfig({ ...complete, [ENV.watchDirectPush]: 'true' }).directPush).toBe(true);
    expect(readWatchConfig({ ...complete, [ENV.watchDirectPush]: 'false' }).directPush).toBe(false);
    expect(() => readWatchConfig({ ...complete, [ENV.watchDirectPush]: 'yes' })).toThrow(/WATCH_DIRECT_PUSH "yes" is neither true nor false/);
  });

  it('gives a route the direct push when both the subscriptions table and the management endpoint are set, and refuses one without the other', () => {
    const route = { LEASE_TABLE_NAME: 'leases', AWS_REGION: 'eu-west-1' };
    expect(readConfig({ ...route, ...complete }).push).toEqual({ subscriptionTableName: 'subs', managementEndpoint: 'https://api.example/v1' });
    expect(readConfig(route).push).toBeUndefined();
    expect(() => readConfig({ ...route, SUBSCRIPTION_TABLE_NAME: 'subs' })).toThrow(/SUBSCRIPTION_TABLE_NAME and WEBSOCKET_MANAGEMENT_ENDPOINT are set together or not at all/);
  });

  it('lists everything that is missing in one message', () => {
    expect(() => readWatchConfig({})).toThrow(ConfigError);
    expect(() => readWatchConfig({})).toThrow(/SUBSCRIPTION_TABLE_NAME is not set; WEBSOCKET_MANAGEMENT_ENDPOINT is not set; AWS_REGION/);
  });

  it('turns renewed events off with WATCH_RENEWED_EVENTS=false, the name the construct sets', () => {
    expect(readWatchConfig({ ...complete, [ENV.watchRenewedEvents]: 'false' }).renewedEvents).toBe(false);
    expect(readWatchConfig({ ...complete, [ENV.watchRenewedEvents]: 'true' }).renewedEvents).toBe(true);
  });

  it('accepts the local name LEASEHOLD_WATCH_RENEWED=off as an alias, and WATCH_RENEWED_EVENTS wins when both are set', () => {
    expect(readWatchRenewedEvents({ [LEGACY_WATCH_RENEWED_ENV]: 'off' })).toBe(false);
    expect(readWatchRenewedEvents({ [LEGACY_WATCH_RENEWED_ENV]: 'on' })).toBe(true);
    expect(readWatchRenewedEvents({ [LEGACY_WATCH_RENEWED_ENV]: 'off', [ENV.watchRenewedEvents]: 'true' })).toBe(true);
    expect(readWatchRenewedEvents({})).toBe(true);
  });

  it('rejects a renewed-events value it cannot read instead of guessing', () => {
    expect(() => readWatchRenewedEvents({ [ENV.watchRenewedEvents]: 'no' })).toThrow(/WATCH_RENEWED_EVENTS "no" is neither true nor false/);
    expect(() => readWatchRenewedEvents({ [LEGACY_WATCH_RENEWED_ENV]: 'false' })).toThrow(/LEASEHOLD_WATCH_RENEWED "false" is neither off nor on/);
  });
});

describe('service identity', () => {
  it('uses the variables the construct sets, for the HTTP and watch functions alike, over the defaults', () => {
    expect(readServiceIdentity({ [ENV.serviceName]: 'payments-leases', [ENV.metricsNamespace]: 'Payments' })).toEqual({
      serviceName: 'payments-leases',
      metricsNamespace: 'Payments',
    });
    expect(readServiceIdentity({})).toEqual({ serviceName: SERVICE_NAME, metricsNamespace: METRICS_NAMESPACE });
  });
});
