/**
 * WebSocket API `$connect`. API Gateway has already checked the caller's IAM signature; this
 * looks the caller up in the watch grants and records what the connection may watch.
 */
import { watchEntry } from '../watch/lambda-entry.js';
import { createConnectHandler } from '../watch/socket-handlers.js';

export const handler = watchEntry(createConnectHandler);
