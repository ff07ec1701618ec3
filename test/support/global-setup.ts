import type { TestProject } from 'vitest/node';
import { startDynamoDBLocal, type DynamoDBLocal } from '../../local/dynamodb/dynamodb-local.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

let db: DynamoDBLocal | undefined;

/** One real DynamoDB Local for the whole run; each test file makes its own tables in it. */
export async function setup(project: TestProject): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  db = await startDynamoDBLocal();
  project.provide('dynamodbEndpoint', db.endpoint);
}

export async function teardown(): Promise<void> {
  await db?.stop();
}
