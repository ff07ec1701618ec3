import { UsageError, USAGE, parseHarnessArgs } from './options.js';
import { runChaos } from './run.js';

/**
 * `npm run chaos -- [options]`: a chaos run of leasehold on this machine (see docs/chaos.md,
 * "Running the harness"). Prints the faults as they are injected, then the report; exits 0 only if
 * no invariant was violated (1 violations, 2 inconclusive, 3 bad usage, 4 the run failed).
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

async function main(argv: string[]): Promise<number> {
  let options;
  try {
    options = parseHarnessArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`${error.message}\n\n${USAGE}\n`);
    return 3;
  }
  if (options === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  try {
    const result = await runChaos(options, (line) => process.stdout.write(`${line}\n`));
    process.stdout.write(`\n${result.report}\n`);
    return result.exitCode;
  } catch (error) {
    process.stderr.write(`chaos run failed: ${(error as Error).stack ?? String(error)}\n`);
    return 4;
  }
}

process.exit(await main(process.argv.slice(2)));
