import { describe, expect, it } from 'vitest';
import { UsageError, parseHarnessArgs, type HarnessOptions } from '../../chaos/harness/options.js';

describe('npm run chaos -- --latency', () => {
  it("runs the API instances without added delays unless asked ('local')", () => {
    expect((parseHarnessArgs([]) as HarnessOptions).latency).toBe('local');
  });

  it('takes --latency aws', () => {
    expect((parseHarnessArgs(['--latency', 'aws']) as HarnessOptions).latency).toBe('aws');
  });

  it('refuses --latency bogus, naming the profiles it takes', () => {
    expect(() => parseHarnessArgs(['--latency', 'bogus'])).toThrow(new UsageError('Expected `--latency` to be one of local, aws, got "bogus".'));
  });
});
