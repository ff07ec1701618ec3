import { describe, expect, it } from 'vitest';
import { usageError } from '../support/cli-usage.js';

/**
 * `leasehold run NAME [options] -- COMMAND`: a command written without the `--` is a usage error
 * that shows the form with `--` and the user's own line corrected, never a misreading of the
 * command's words as run's. Through run's main function, which refuses before it connects.
 */

describe('leasehold run without the "--" before its command', () => {
  it('a forgotten "--" before a script shows the form with "--" and the corrected line', async () => {
    const error = await usageError(['reports:nightly', './job.sh']);
    expect(error.message).toContain('leasehold run NAME [options] -- COMMAND [ARGS...]');
    expect(error.message).toContain('Did you mean `leasehold run reports:nightly -- ./job.sh`?');
    expect(error.message).not.toContain('one lease NAME only');
  });

  it('a command with flags of its own after run\'s options is not read as run\'s unknown option', async () => {
    const error = await usageError(['reports:nightly', '--ttl', '15s', 'ls', '-la']);
    expect(error.message).toContain('Did you mean `leasehold run reports:nightly --ttl 15s -- ls -la`?');
    expect(error.message).not.toContain('Unknown option');
  });

  it('the corrected line quotes the words a shell would split or expand', async () => {
    const error = await usageError(['reports:nightly', 'sh', '-c', "echo 'it works' > out"]);
    expect(error.message).toContain(`Did you mean \`leasehold run reports:nightly -- sh -c 'echo '\\''it works'\\'' > out'\`?`);
  });

  it('a mistyped flag of run\'s own, before any command word, still suggests the flag it resembles', async () => {
    const error = await usageError(['reports:nightly', '--holdr', 'worker-1']);
    expect(error.message).toBe("Unknown option '--holdr'. Did you mean --holder?");
  });

  it('no command at all says it is missing and shows the form with "--"', async () => {
    const error = await usageError(['reports:nightly', '--ttl', '15s']);
    expect(error.message).toContain('the command to run is missing: put it after -- (leasehold run NAME [options] -- COMMAND [ARGS...])');
  });

  it('after "--" every word is the command\'s: its flags and a second word reach no check of run\'s', async () => {
    // It gets as far as the ttl check, past where a command's words could have been misread.
    const error = await usageError(['reports:nightly', '--ttl', '15', '--', 'ls', '-la', './job.sh']);
    expect(error.message).toContain('--ttl must be a duration with a unit');
  });
});
