import { parseArgs } from 'node:util';
import { LATENCY_PROFILES, configurationsOf, type Configuration, type LatencyProfile } from './configurations.js';
import { FULL, PROFILED_SECTIONS, QUICK, SECTIONS, type Plan, type Section } from './plan.js';
import { selectScaleRows } from './scale.js';

/** `npm run bench`'s command line: its flags, and the run they ask for. */

export const HELP = `Usage: npm run bench -- [--quick] [--only SECTIONS] [--latency LIST] [--repeat N] [--trials N] [--seed N] [--report-only]

  --quick          short run (a few minutes, smaller counts); writes bench/results/quick.{md,json,svg}
                   instead of BENCHMARKS.md, bench/results/latest.json and docs/failover.svg
  --only LIST      comma-separated sections: ${SECTIONS.join(', ')}; a full run copies the other
                   sections from bench/results/latest.json and says so in the report
  --latency LIST   comma-separated latency profiles of the local server for the ${PROFILED_SECTIONS.join(', ')}
                   sections: local (loopback, DynamoDB Local), aws (the delays AWS adds, local/latency/),
                   aws-provisioned (aws, with the construct's HANDOVER_PROVISIONED_CONCURRENCY: no cold
                   start on the handover routes); each runs with the watch's direct push and with the
                   stream path alone, side by side (aws-provisioned with the direct push only)
                   (default: local,aws,aws-provisioned; the rwlocks section runs under local and aws,
                   aws-provisioned counting as aws; the other sections always run under local)
  --repeat N       measure the ${PROFILED_SECTIONS.join(', ')} sections N times in this run (the
                   others once); the report gives each headline number's median over the runs and
                   their min–max (default: 1)
  --trials N       kills per system in the failover section (default: 32 full, 6 quick)
  --seed N         seed of the random kill and handover points (default: random)
  --scale-leases L only these rows of the scale section, by lease count (e.g. 100000), each count
                   optionally :batched or :one (e.g. 100000:one); the other rows are kept from
                   bench/results/latest.json, each with the date it was measured
  --report-only    measure nothing: render BENCHMARKS.md again from bench/results/latest.json (taking
                   in a newer bench/results/bundle.json)`;

export interface BenchArgs {
  help: boolean;
  quick: boolean;
  reportOnly: boolean;
  only?: string;
  latency?: string;
  repeat?: string;
  seed?: string;
  trials?: string;
  scaleLeases?: string;
}

/** The flags as given, unchecked: `--help` and `--report-only` need none of the others to be valid. */
export function parseBenchArgs(args: string[] = process.argv.slice(2)): BenchArgs {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      latency: { type: 'string' },
      repeat: { type: 'string' },
      seed: { type: 'string' },
      trials: { type: 'string' },
      'scale-leases': { type: 'string' },
      'report-only': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  return {
    help: values.help ?? false,
    quick: values.quick ?? false,
    reportOnly: values['report-only'] ?? false,
    ...(values.only !== undefined ? { only: values.only } : {}),
    ...(values.latency !== undefined ? { latency: values.latency } : {}),
    ...(values.repeat !== undefined ? { repeat: values.repeat } : {}),
    ...(values.seed !== undefined ? { seed: values.seed } : {}),
    ...(values.trials !== undefined ? { trials: values.trials } : {}),
    ...(values['scale-leases'] !== undefined ? { scaleLeases: values['scale-leases'] } : {}),
  };
}

/** What a measuring run does: its counts, its sections, its seed, and the command that reproduces it in the report. */
export interface RunSettings {
  plan: Plan;
  only: Set<Section>;
  /** The configurations of the handover, rolling and groups sections, in the report's order. */
  configurations: Configuration[];
  /** How many times the chosen sections are measured. */
  repeat: number;
  seed: number;
  command: string;
}

/** `--latency local,aws`: the profiles, each once; anything else is refused, naming the flag. */
export function parseLatencies(value: string): LatencyProfile[] {
  const names = value.split(',').map((s) => s.trim());
  const expected = `expected a comma-separated list of ${LATENCY_PROFILES.join(', ')}, got "${value}"`;
  if (names.some((n) => !(LATENCY_PROFILES as readonly string[]).includes(n))) throw new Error(`--latency: ${expected}`);
  if (new Set(names).size !== names.length) throw new Error(`--latency: each profile at most once, got "${value}"`);
  return names as LatencyProfile[];
}

/** The most runs one invocation takes (each run of the three profiled sections takes minutes). */
export const MAX_REPEAT = 20;

/** `--repeat N`: a whole number of runs from 1 to MAX_REPEAT. */
export function parseRepeat(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < 1 || n > MAX_REPEAT) {
    throw new Error(`--repeat: expected a whole number of runs from 1 to ${MAX_REPEAT}, got "${value}"`);
  }
  return n;
}

/** Checks the flags of a measuring run and derives its settings; throws on a bad value, naming the flag. */
export function runSettings(args: BenchArgs): RunSettings {
  const { quick } = args;
  const plan = { ...(quick ? QUICK : FULL) };
  if (args.trials !== undefined) {
    plan.failoverTrials = Number(args.trials);
    if (!Number.isInteger(plan.failoverTrials) || plan.failoverTrials < 1) throw new Error(`--trials: expected a positive integer, got ${args.trials}`);
  }
  if (args.scaleLeases !== undefined) {
    plan.scale = selectScaleRows(plan.scale, args.scaleLeases);
    if (plan.scale.length === 0) throw new Error(`--scale-leases: no row of the ${quick ? 'quick' : 'full'} plan has ${args.scaleLeases} leases`);
  }
  const only = new Set<Section>((args.only?.split(',').map((s) => s.trim()).filter(Boolean) as Section[] | undefined) ?? SECTIONS);
  for (const s of only) if (!SECTIONS.includes(s)) throw new Error(`unknown section "${s}" (expected ${SECTIONS.join(', ')})`);
  const configurations = configurationsOf(args.latency !== undefined ? parseLatencies(args.latency) : LATENCY_PROFILES);
  const repeat = args.repeat !== undefined ? parseRepeat(args.repeat) : 1;
  const seed = args.seed !== undefined ? Number(args.seed) : Math.floor(Math.random() * 2 ** 31);
  const flags = [
    quick ? '--quick' : '',
    args.only ? `--only ${args.only}` : '',
    args.latency !== undefined ? `--latency ${args.latency}` : '',
    args.repeat !== undefined ? `--repeat ${args.repeat}` : '',
    args.trials ? `--trials ${args.trials}` : '',
    args.scaleLeases ? `--scale-leases ${args.scaleLeases}` : '',
  ].filter(Boolean);
  const command = `npm run bench${flags.length > 0 ? ` -- ${flags.join(' ')}` : ''}`;
  return { plan, only, configurations, repeat, seed, command };
}
