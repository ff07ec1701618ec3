import type { TestProject } from 'vitest/node';
import { startDynamoDBLocal, type DynamoDBLocal } from '../../local/dynamodb/dynamodb-local.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

/**
 * One emulator for the whole run, shared by every project that lists this file (integration and
 * slow): each project runs its own global setup, possibly through its own copy of this module, so
 * the count lives on the main process's global object. The last teardown stops it.
 */
interface Shared {
  db: Promise<DynamoDBLocal>;
  users: number;
}
const KEY = Symbol.for('leasehold.test.dynamodbLocal');
const registry = globalThis as { [KEY]?: Shared };

/** One real DynamoDB Local for the whole run; each test file makes its own tables in it. */
export async function setup(project: TestProject): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  registry[KEY] ??= { db: startDynamoDBLocal(), users: 0 };
  registry[KEY].users += 1;
  project.provide('dynamodbEndpoint', (await registry[KEY].db).endpoint);
}

export async function teardown(): Promise<void> {
  const shared = registry[KEY];
  if (shared === undefined) return;
  shared.users -= 1;
  if (shared.users > 0) return;
  delete registry[KEY];
  // A start that failed was reported by setup; there is nothing to stop.
  await shared.db.then((db) => db.stop(), () => undefined);
}
