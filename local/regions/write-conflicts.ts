import { ReplicatedWriteConflictException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * A fault hook for one Region's DynamoDB client: its writes fail with
 * `ReplicatedWriteConflictException`, as a global table with multi-Region strong consistency
 * answers a write to an item another Region is writing at that moment. Local only (the local
 * server adds it to its client's middleware stack; nothing of it is in the Lambda bundle).
 *
 * The failure is made before the request leaves, so the write does not happen, exactly as with the
 * real exception; and it is made inside the SDK's retry loop, where DynamoDB's own answer would
 * be, so the store's client retries it as it would the real one (functions/dynamodb-retry.ts).
 */

/** What to inject: the next `count` writes, or each write with `probability` (0 to 1) until cleared. */
export type ConflictInjection = number | { probability: number };

export interface WriteConflictInjector {
  /** Replaces what was asked before; `0` stops injecting. */
  inject(what: ConflictInjection): void;
  /** Conflicts injected since start. */
  injected(): number;
  /** Adds the hook to a client's middleware stack (the local server's `configureDynamoDB`). */
  install(client: DynamoDBDocumentClient): void;
}

/** The DynamoDB operations that write an item: the only ones a replicated write conflict can refuse. */
const WRITE_COMMANDS: ReadonlySet<string> = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
]);

export function createWriteConflictInjector(random: () => number = Math.random): WriteConflictInjector {
  let remaining = 0;
  let probability = 0;
  let injected = 0;
  const takeOne = (): boolean => {
    if (remaining > 0) {
      remaining -= 1;
      return true;
    }
    return probability > 0 && random() < probability;
  };
  return {
    inject(what) {
      validateInjection(what);
      remaining = typeof what === 'number' ? what : 0;
      probability = typeof what === 'number' ? 0 : what.probability;
    },
    injected: () => injected,
    install(client) {
      client.middlewareStack.add(
        (next, context) =>
          function injectReplicatedWriteConflict(args) {
            if (!WRITE_COMMANDS.has(context.commandName ?? '') || !takeOne()) return next(args);
            injected += 1;
            return Promise.reject(
              new ReplicatedWriteConflictException({
                message: 'One or more items in the request are being modified by a request in another Region (injected locally).',
                $metadata: { httpStatusCode: 400 },
              }),
            );
          },
        // After the retry middleware (finalizeRequest, high): each attempt meets the hook, as each would meet DynamoDB.
        { step: 'finalizeRequest', priority: 'low', name: 'injectReplicatedWriteConflict' },
      );
    },
  };
}

export function validateInjection(what: unknown): asserts what is ConflictInjection {
  if (typeof what === 'number') {
    if (!Number.isInteger(what) || what < 0) throw new TypeError(`Expected a count of conflicts to be a non-negative integer, got ${what}.`);
    return;
  }
  const p = (what as { probability?: unknown } | null)?.probability;
  if (typeof p !== 'number' || !(p >= 0 && p <= 1)) {
    throw new TypeError(`Expected a count of conflicts or { probability } from 0 to 1, got ${JSON.stringify(what)}.`);
  }
}
