import { describe, expect, it } from 'vitest';
import { parseBenchArgs, parseLatencies, parseRepeat, runSettings } from '../../bench/options.js';

const settings = (...argv: string[]) => runSettings(parseBenchArgs(argv));
const labels = (argv: string[]) => settings(...argv).configurations.map((c) => `${c.latency}/${c.push}`);

describe('npm run bench: --latency', () => {
  it('measures every profile by default, each with the direct push and with the stream path alone, aws-provisioned with the direct push only', () => {
    expect(labels([])).toEqual(['local/direct', 'local/stream', 'aws/direct', 'aws/stream', 'aws-provisioned/direct']);
  });

  it('takes a comma-separated list of profiles, in any order, the report keeping local before aws', () => {
    expect(labels(['--latency', 'aws'])).toEqual(['aws/direct', 'aws/stream']);
    expect(labels(['--latency', 'aws, local'])).toEqual(['local/direct', 'local/stream', 'aws/direct', 'aws/stream']);
  });

  it('refuses an unknown, empty or repeated profile, naming the flag', () => {
    expect(() => settings('--latency', 'azure')).toThrow(/^--latency: expected a comma-separated list of local, aws, aws-provisioned, got "azure"$/);
    expect(() => settings('--latency', '')).toThrow(/^--latency: /);
    expect(() => settings('--latency', 'local,')).toThrow(/^--latency: /);
    expect(() => parseLatencies('aws,aws')).toThrow(/^--latency: each profile at most once/);
  });
});

describe('npm run bench: --repeat', () => {
  it('measures once by default, N times when asked', () => {
    expect(settings().repeat).toBe(1);
    expect(settings('--repeat', '3').repeat).toBe(3);
  });

  it('refuses anything but a whole number of runs from 1 to 20, naming the flag', () => {
    for (const bad of ['0', '-1', '2.5', 'three', '', '21', '1e1']) {
      expect(() => parseRepeat(bad), bad).toThrow(/^--repeat: expected a whole number of runs from 1 to 20, got /);
    }
  });
});

describe('npm run bench: the command a report names', () => {
  it('repeats every flag given, so the run can be made again', () => {
    expect(settings('--only', 'handover,rolling,groups', '--repeat', '3').command).toBe('npm run bench -- --only handover,rolling,groups --repeat 3');
    expect(settings('--quick', '--latency', 'aws').command).toBe('npm run bench -- --quick --latency aws');
    expect(settings().command).toBe('npm run bench');
  });

  it('still refuses an unknown section', () => {
    expect(() => settings('--only', 'handover,nope')).toThrow(/unknown section "nope"/);
  });
});
