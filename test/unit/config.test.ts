import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '../../functions/config.js';

describe('handler configuration', () => {
  it('reads the table, region and optional endpoint', () => {
    expect(readConfig({ LEASE_TABLE_NAME: 'leases', AWS_REGION: 'eu-west-1' })).toEqual({
      tableName: 'leases',
      region: 'eu-west-1',
      dynamodbEndpoint: undefined,
    });
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
