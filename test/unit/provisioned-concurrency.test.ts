import { describe, expect, it } from 'vitest';
import { serviceSettings } from '../../infra/app-context.js';
import {
  HANDOVER_PROVISIONED_CONCURRENCY,
  MAX_PROVISIONED_PER_ROUTE,
  parseProvisionedConcurrency,
  validateProvisionedConcurrency,
} from '../../infra/provisioned-concurrency.js';

describe('validateProvisionedConcurrency', () => {
  it('accepts route ids with integer counts from 0 to MAX_PROVISIONED_PER_ROUTE, and the handover preset', () => {
    const setting = { acquire: 0, release: MAX_PROVISIONED_PER_ROUTE, 'handoff-batch': 1 };
    expect(validateProvisionedConcurrency(setting)).toBe(setting);
    expect(validateProvisionedConcurrency(HANDOVER_PROVISIONED_CONCURRENCY)).toEqual({ acquire: 16, release: 1, handoff: 1, 'handoff-batch': 1 });
    expect(validateProvisionedConcurrency({})).toEqual({});
  });

  it.each([
    [{ acquire: -1 }, /`provisionedConcurrency\.acquire` to be an integer from 0 to 1000; got -1/],
    [{ acquire: 1.5 }, /`provisionedConcurrency\.acquire` .* got 1\.5/],
    [{ acquire: MAX_PROVISIONED_PER_ROUTE + 1 }, /got 1001/],
    [{ acquire: '2' }, /`provisionedConcurrency\.acquire` .* got 2/],
    [{ nope: 1 }, /to name routes of the registry \(acquire, .*\); got "nope"/],
    [null, /to be an object of route ids to counts/],
    [[1], /to be an object of route ids to counts/],
  ])('refuses %j with a TypeError naming the entry', (value, message) => {
    expect(() => validateProvisionedConcurrency(value)).toThrow(TypeError);
    expect(() => validateProvisionedConcurrency(value)).toThrow(message);
  });
});

describe('parseProvisionedConcurrency', () => {
  it('reads "handover" as the handover preset', () => {
    expect(parseProvisionedConcurrency('handover')).toBe(HANDOVER_PROVISIONED_CONCURRENCY);
  });

  it('reads route=count pairs separated by commas, spaces around them allowed', () => {
    expect(parseProvisionedConcurrency('acquire=2, handoff=1,handoff-batch=0')).toEqual({ acquire: 2, handoff: 1, 'handoff-batch': 0 });
  });

  it.each([
    ['acquire=2,acquire=3', /name each route once; "acquire" is given twice/],
    ['nope=1', /`--provisioned-concurrency` to name routes of the registry .*; got "nope"/],
    ['acquire=-1', /"handover" or route=count pairs .*; got "acquire=-1"/],
    ['acquire=1.5', /got "acquire=1\.5"/],
    ['acquire=1001', /`--provisioned-concurrency\.acquire` to be an integer from 0 to 1000; got 1001/],
    ['', /got ""/],
  ])('refuses %j with a TypeError', (text, message) => {
    expect(() => parseProvisionedConcurrency(text)).toThrow(TypeError);
    expect(() => parseProvisionedConcurrency(text)).toThrow(message);
  });
});

describe('the apps\' context `leasehold:provisionedConcurrency`', () => {
  const settingOf = (value: unknown) => serviceSettings((key) => (key === 'provisionedConcurrency' ? value : undefined)).provisionedConcurrency;

  it('is read as the parser reads it from -c, as an object from cdk.json, and absent when unset', () => {
    expect(settingOf('handover')).toBe(HANDOVER_PROVISIONED_CONCURRENCY);
    expect(settingOf('acquire=2,release=1,handoff=1')).toEqual({ acquire: 2, release: 1, handoff: 1 });
    expect(settingOf({ acquire: 2 })).toEqual({ acquire: 2 });
    expect(settingOf(undefined)).toBeUndefined();
    expect(settingOf('')).toBeUndefined();
  });

  it('is refused, naming the context key, when it is not a setting', () => {
    expect(() => settingOf('acquire=x')).toThrow(/`leasehold:provisionedConcurrency` to be "handover" or route=count pairs/);
    expect(() => settingOf({ acquire: -1 })).toThrow(/`leasehold:provisionedConcurrency\.acquire` to be an integer/);
  });
});
