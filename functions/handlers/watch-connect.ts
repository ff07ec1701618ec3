/** WebSocket API `$connect` (IAM-authorized by API Gateway). */
import { watchEntry } from '../watch/lambda-entry.js';
import { createConnectHandler } from '../watch/socket-handlers.js';

export const handler = watchEntry(createConnectHandler);
