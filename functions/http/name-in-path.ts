import { ROUTES, ValidationError, validateBatchPrefix, validateGroup, validateName } from '../../client/src/protocol/index.js';

/** How each path parameter is checked: a name, prefix or group holding a `/` fails its own rule. */
const PARAMETER_RULES: Record<string, (value: string, field: string) => unknown> = {
  name: validateName,
  prefix: validateBatchPrefix,
  group: validateGroup,
};

/**
 * The refusal of a path that names no route only because its name holds a character a path splits
 * on: `POST /v1/leases/a/b/acquire` is an acquire of "a/b", so it gets the name's rule (the alphabet
 * A-Z a-z 0-9 . _ : -) as a 400 VALIDATION_ERROR rather than a bare 404 ROUTE_NOT_FOUND. Only routes
 * that end in a verb after the parameter are recognised this way (`/v1/leases/a/b/steal` could be
 * anything, and stays a 404), and only with the route's own method. Undefined for any other path.
 */
export function nameOutsideAlphabetError(method: string, rawPath: string): ValidationError | undefined {
  const segments = rawPath.split('/');
  // The longest routes first: `/v1/prefixes/a/b/rwlocks/renew` is the rwlocks' batch for "a/b",
  // not the leases' batch for "a/b/rwlocks".
  for (const route of [...ROUTES].sort((a, b) => b.path.split('/').length - a.path.split('/').length)) {
    if (route.method !== method) continue;
    const pattern = route.path.split('/');
    const at = pattern.findIndex((segment) => segment.startsWith('{'));
    const head = pattern.slice(0, at);
    const tail = pattern.slice(at + 1);
    if (at === -1 || tail.length === 0 || segments.length <= pattern.length) continue;
    if (!head.every((segment, i) => segments[i] === segment)) continue;
    if (!tail.every((segment, i) => segments[segments.length - tail.length + i] === segment)) continue;
    const parameter = (pattern[at] as string).slice(1, -1);
    const value = segments.slice(at, segments.length - tail.length).join('/');
    try {
      PARAMETER_RULES[parameter]?.(value, parameter);
    } catch (error) {
      if (error instanceof ValidationError) return error;
      throw error;
    }
  }
  return undefined;
}
