/** WebSocket API `$disconnect`. */
import { watchEntry } from '../watch/lambda-entry.js';
import { createDisconnectHandler } from '../watch/socket-handlers.js';

export const handler = watchEntry(createDisconnectHandler);
