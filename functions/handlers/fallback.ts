import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { isLeaseholdError, InternalError, MethodNotAllowedError } from '../../client/src/protocol/index.js';
import { errorResponse } from '../http/responses.js';
import { requireCanonicalPath } from '../http/canonical-path.js';
import { nameOutsideAlphabetError } from '../http/name-in-path.js';
import { matchRoute } from '../http/routes.js';

/**
 * API Gateway's `$default` route: answers paths that are not canonical (400 VALIDATION_ERROR, as
 * every route does), a route's path whose name holds a `/` (400 VALIDATION_ERROR naming the
 * alphabet), unknown paths (404 ROUTE_NOT_FOUND) and wrong methods (405
 * METHOD_NOT_ALLOWED) with the v1 error body instead of API Gateway's own `{"message"}`.
 * It touches no table, so it needs no DynamoDB permission.
 */
export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  try {
    // As every route's handler does, before routing: a path spelled another way is a 400, not a 404.
    requireCanonicalPath(event.rawPath);
    // A name holding a `/` splits into more segments than its route has: say what a name may hold.
    const misplaced = nameOutsideAlphabetError(event.requestContext.http.method, event.rawPath);
    if (misplaced) throw misplaced;
    matchRoute(event.requestContext.http.method, event.rawPath);
    // A real route reaching $default means the API and this table disagree: never expose why.
    return errorResponse(new InternalError());
  } catch (error) {
    if (!isLeaseholdError(error)) return errorResponse(new InternalError());
    const response = errorResponse(error);
    if (error instanceof MethodNotAllowedError) response.headers = { ...response.headers, allow: error.allow.join(', ') };
    return response;
  }
}
