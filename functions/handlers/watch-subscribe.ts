/** WebSocket API route `subscribe` (selection expression `$request.body.action`). */
import { watchEntry } from '../watch/lambda-entry.js';
import { createSubscribeHandler } from '../watch/socket-handlers.js';

export const handler = watchEntry(createSubscribeHandler);
