import { parseArgs } from 'node:util';
import { FULL, QUICK, SECTIONS, type Plan, type Section } from './plan.js';
import { selectScaleRows } from './scale.js';

/** `npm run bench`'s command line: its flags, and the run they ask for. */

export const HELP = `Usage: npm run bench -- [--quick] [--only SECTIONS] [--trials N] [--seed N] [--report-only]

  --quick          short run (a few minutes, smaller counts); writes bench/results/quick.{md,json,svg}
                   instead of BENCHMARKS.md, bench/results/latest.json and docs/failover.svg
  --only LIST      comma-separated sections: ${SECTIONS.join(', ')}; a full run copies the other
                   sections from bench/results/latest.json and says so in the report
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
  seed?: string;
  trials?: string;
  scaleLeases?: string;
}

/** The flags as given, unchecked: `--help` and `--report-only` need none of the others to be valid. */
export function parseBenchArgs(): BenchArgs {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
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
    ...(values.seed !== undefined ? { seed: values.seed } : {}),
    ...(values.trials !== undefined ? { trials: values.trials } : {}),
    ...(values['scale-leases'] !== undefined ? { scaleLeases: values['scale-leases'] } : {}),
  };
}

/** What a measuring run does: its counts, its sections, its seed, and the command that reproduces it in the report. */
export interface RunSettings {
  plan: Plan;
  only: Set<Section>;
  seed: number;
  command: string;
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
  const seed = args.seed !== undefined ? Number(args.seed) : Math.floor(Math.random() * 2 ** 31);
  const command = `npm run bench${quick || args.only || args.trials || args.scaleLeases ? ' --' : ''}${quick ? ' --quick' : ''}${args.only ? ` --only ${args.only}` : ''}${args.trials ? ` --trials ${args.trials}` : ''}${args.scaleLeases ? ` --scale-leases ${args.scaleLeases}` : ''}`;
  return { plan, only, seed, command };
}
