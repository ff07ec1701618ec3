import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { LOCAL_PRINCIPAL } from '../caller-keys.js';

/**
 * Who is calling, as the one place that reads it from a request: the IAM principal ARN API
 * Gateway's IAM authorization puts in the request context (in AWS), the SigV4 access key id (the
 * local server with SigV4 on), else "local". Never a secret: an ARN or an access key id names a
 * caller, it does not authorize one. Handlers pass it to the stores as a parameter; the stores
 * never read events.
 */
export function callerPrincipal(event: APIGatewayProxyEventV2): string {
  const iam = (event.requestContext as { authorizer?: { iam?: { userArn?: string | null; accessKey?: string | null } } }).authorizer?.iam;
  return iam?.userArn || iam?.accessKey || LOCAL_PRINCIPAL;
}

/**
 * A principal as shown to everyone who may read the lease (`revoked.by`): an assumed role's
 * session name is dropped, because under SSO it is often a person's e-mail address
 * (`arn:aws:sts::123:assumed-role/Role/alice@example.com` becomes `arn:aws:sts::123:assumed-role/Role`).
 * The full ARN goes to the audit log line only.
 */
export function publicPrincipal(principal: string): string {
  const match = /^(arn:[^:]+:sts::[^:]*:assumed-role\/[^/]+)\/.+$/.exec(principal);
  return match ? (match[1] as string) : principal;
}
