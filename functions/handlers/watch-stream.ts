/** The lease table stream consumer (DynamoDB Streams event source mapping). */
import { watchEntry } from '../watch/lambda-entry.js';
import { createStreamHandler } from '../watch/stream-handler.js';

export const handler = watchEntry(createStreamHandler);
