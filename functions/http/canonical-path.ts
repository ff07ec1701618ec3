import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ValidationError } from '../../client/src/protocol/index.js';

/**
 * Every path of the API has one spelling: the route's segments and a name, prefix or group whose
 * characters (A-Z a-z 0-9 . _ : -) are all legal in a path segment as they are. A path spelled any
 * other way (`..` or `.` segments, `//`, percent-encoding) is refused before routing has a say, so
 * what API Gateway routed on, what IAM matched the route ARN against and what the handler reads
 * are always the same name: nothing in between decodes or normalizes it differently.
 *
 * A trailing `/` is left to routing: it names no route (404), so routing and IAM cannot disagree on it.
 */
export function canonicalPathError(rawPath: string): ValidationError | undefined {
  if (!rawPath.startsWith('/')) return new ValidationError('path', 'must be canonical: start with "/"');
  if (rawPath.includes('%')) return new ValidationError('path', 'must be canonical: no percent-encoding (names, prefixes and groups are A-Z a-z 0-9 . _ : - and need none)');
  const segments = rawPath.split('/').slice(1);
  const inner = segments.slice(0, -1);
  if (inner.includes('')) return new ValidationError('path', 'must be canonical: no empty segment ("//")');
  if (segments.some((segment) => segment === '.' || segment === '..')) return new ValidationError('path', 'must be canonical: no "." or ".." segment');
  return undefined;
}

/** Throws the VALIDATION_ERROR of a path that is not canonical (see canonicalPathError). */
export function requireCanonicalPath(rawPath: string): void {
  const error = canonicalPathError(rawPath);
  if (error) throw error;
}

/**
 * Refuses (400 VALIDATION_ERROR, field `path`) a request whose raw path, as the client sent it
 * (API Gateway's `rawPath`, still percent-encoded), is not canonical. Runs before the body is read.
 */
export function canonicalPath(): middy.MiddlewareObj<APIGatewayProxyEventV2> {
  return {
    before: function canonicalPathBefore(request) {
      requireCanonicalPath(request.event.rawPath ?? request.event.requestContext?.http?.path ?? '/');
    },
  };
}
