/**
 * WebSocket API `$connect`. API Gateway has already checked the caller's IAM signature; there is
 * nothing to store until the client subscribes, so this needs no client, no table and no config.
 */
export const handler = async (): Promise<{ statusCode: number }> => ({ statusCode: 200 });
