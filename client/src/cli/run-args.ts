/// <reference types="node" />
import { parseArgs } from 'node:util';
import { UsageError } from './exit-codes.js';
import { type OptionValues, type OptionsSpec, parseCommandLine } from './options.js';

/**
 * `run`'s command line: its own NAME and options, then `--`, then the command. Everything after the
 * `--` belongs to the command, so its flags are never read as run's. Without the `--`, a command's
 * words would be misread (`./job.sh` as a second NAME, the `-l` of `ls -la` as an unknown option of
 * run's): when a second word that is not an option comes before any unknown option, the user meant a
 * command, and the error shows their own line with the `--` put in.
 */

export const RUN_FORM = 'leasehold run NAME [options] -- COMMAND [ARGS...]';

export interface RunCommandLine<T extends OptionsSpec> {
  values: OptionValues<T>;
  positionals: string[];
  /** What follows the `--`: the command and its arguments (empty without a `--`). */
  commandLine: string[];
}

export function parseRunCommandLine<T extends OptionsSpec>(argv: string[], options: T): RunCommandLine<T> {
  const split = argv.indexOf('--');
  if (split !== -1) return { ...parseCommandLine('run', argv.slice(0, split), options), commandLine: argv.slice(split + 1) };
  const commandAt = strayCommandIndex(argv, options);
  if (commandAt !== undefined) {
    const corrected = `leasehold run ${[...argv.slice(0, commandAt), '--', ...argv.slice(commandAt)].map(shellWord).join(' ')}`;
    throw new UsageError(`the command goes after "--" (${RUN_FORM}), so that its arguments are not read as run's. Did you mean \`${corrected}\`?`, 'run');
  }
  return { ...parseCommandLine('run', argv, options), commandLine: [] };
}

/** The options that carry run's NAME (`--shared NAME`, `--exclusive NAME`): with one, the first positional is already the command. */
const NAME_OPTIONS: ReadonlySet<string> = new Set(['shared', 'exclusive']);

/** Where the command starts when it was written without `--`: the second NAME-like word, if no unknown option precedes it. */
function strayCommandIndex(argv: string[], options: OptionsSpec): number | undefined {
  let tokens: ReturnType<typeof parseArgs>['tokens'];
  try {
    tokens = parseArgs({ args: argv, options, allowPositionals: true, strict: false, tokens: true }).tokens;
  } catch {
    return undefined; // the strict parse that follows says what is wrong
  }
  let positionals = 0;
  for (const token of tokens ?? []) {
    if (token.kind === 'option' && !Object.hasOwn(options, token.name)) return undefined; // a mistyped flag of run's: say that
    if (token.kind === 'option' && NAME_OPTIONS.has(token.name) && token.value !== undefined) positionals += 1;
    if (token.kind === 'positional' && ++positionals >= 2) return token.index;
  }
  return undefined;
}

/** A word as a POSIX shell reads it back: quoted only when it has to be. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
