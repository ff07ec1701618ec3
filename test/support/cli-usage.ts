import { expect } from 'vitest';
import { UsageError } from '../../client/src/cli/exit-codes.js';
import { runCommand } from '../../client/src/cli/run.js';

/** The UsageError `leasehold run` refuses `argv` with, before it connects (it fails the test if none). */
export async function usageError(argv: string[]): Promise<UsageError> {
  const error = await runCommand(argv).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(UsageError);
  return error as UsageError;
}
