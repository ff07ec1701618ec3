import { describe, expect, it } from 'vitest';
import { faultChoicesFor } from '../../chaos/harness/nemesis.js';
import { UsageError, parseHarnessArgs, type HarnessOptions } from '../../chaos/harness/options.js';

const parse = (...argv: string[]) => parseHarnessArgs(['--seed', '1', ...argv]) as HarnessOptions;

describe('the chaos harness options for Regions', () => {
  it('runs one Region by default, without the Region outage fault', () => {
    const options = parse();
    expect(options).toMatchObject({ regions: 1, apiInstances: 3 });
    expect(options.faults).not.toContain('region-outage');
  });

  it('with --regions 3 runs one API instance per Region and adds the Region outage to the default faults', () => {
    const options = parse('--regions', '3');
    expect(options).toMatchObject({ regions: 3, apiInstances: 3 });
    expect(options.faults).toEqual(faultChoicesFor(3));
    expect(options.faults).toContain('region-outage');
  });

  it('takes --faults region-outage with --regions 3', () => {
    expect(parse('--regions', '3', '--faults', 'partition,region-outage').faults).toEqual(['partition', 'region-outage']);
  });

  it('refuses a Region outage without Regions, another number of Regions, and --api-instances with Regions, naming the flag', () => {
    expect(() => parse('--faults', 'region-outage')).toThrow(new UsageError('Expected `--faults region-outage` only with `--regions 3`.'));
    expect(() => parse('--regions', '2')).toThrow(/Expected `--regions` to be 1 or 3/);
    expect(() => parse('--regions', '3', '--api-instances', '2')).toThrow(/Expected `--api-instances` without `--regions 3`/);
  });
});

describe('the chaos harness options for lease groups', () => {
  it('takes --fence epoch with --groups (each partition claims its own epoch), and item fencing by default', () => {
    expect(parse('--groups', '--fence', 'epoch')).toMatchObject({ fenceMode: 'epoch' });
    expect(parse('--groups')).toMatchObject({ fenceMode: 'item' });
  });
});
