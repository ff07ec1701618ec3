/**
 * Handler configuration, read from the environment once per cold start. Every missing or invalid
 * setting is reported in one message, so a broken deployment says everything that is wrong at once.
 */
export interface HandlerConfig {
  tableName: string;
  region: string;
  /** Only for DynamoDB Local or tests; unset in AWS. */
  dynamodbEndpoint: string | undefined;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function readConfig(env: Record<string, string | undefined>): HandlerConfig {
  const problems: string[] = [];
  const tableName = env.LEASE_TABLE_NAME?.trim();
  const region = (env.AWS_REGION ?? env.AWS_DEFAULT_REGION)?.trim();
  const endpoint = env.DYNAMODB_ENDPOINT?.trim() || undefined;
  if (!tableName) problems.push('LEASE_TABLE_NAME (the DynamoDB lease table) is not set');
  else if (!/^[A-Za-z0-9_.-]{3,255}$/.test(tableName)) problems.push(`LEASE_TABLE_NAME "${tableName}" is not a valid table name`);
  if (!region) problems.push('AWS_REGION (or AWS_DEFAULT_REGION) is not set');
  if (endpoint !== undefined && !/^https?:\/\/[^\s]+$/.test(endpoint)) problems.push(`DYNAMODB_ENDPOINT "${endpoint}" is not an http(s) URL`);
  if (problems.length > 0) {
    throw new ConfigError(`leasehold handler configuration is incomplete: ${problems.join('; ')}.`);
  }
  return { tableName: tableName as string, region: region as string, dynamodbEndpoint: endpoint };
}
