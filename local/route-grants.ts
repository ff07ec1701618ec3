import { ForbiddenError, type Route } from '../client/src/protocol/index.js';
import { grantCovers, grantedRoutes, type GrantKind, type GrantedRoute } from '../infra/grant-routes.js';

/**
 * The HTTP routes each SigV4 credential of the local server may call, as the construct's grants
 * allow them in AWS: a credential stands for a role given `grantLeases`, `grantRead` and/or
 * `grantAdmin` (its `access`) for each of its `prefixes` (or for every name without them), and a
 * request is allowed when one of the ARN patterns those grants produce covers its method and path
 * (infra/grant-routes.ts, matched as IAM matches a resource). So a key for `team-a.` gets 403
 * FORBIDDEN on `team-b.…`, on list (`GET /v1/leases`, which shows every name and which no
 * prefix-scoped grant includes, whatever its `prefix` query), on a batch under another prefix, on
 * another group, and on revoke unless its `access` includes `admin`.
 */
export interface CredentialGrants {
  accessKeyId: string;
  /** The names it is granted: those under these prefixes; every name when absent. */
  prefixes?: readonly string[];
  /**
   * The grant methods it stands for. Default: `['leases']` with `prefixes` (grantLeases(role,
   * prefix)); `['leases', 'admin']` without (every route, as before routes were checked).
   */
  access?: readonly GrantKind[];
}

const GRANT_KINDS: readonly GrantKind[] = ['leases', 'read', 'admin'];

/** A credential's `access`, or its default. */
export function accessOf(credential: Pick<CredentialGrants, 'prefixes' | 'access'>): readonly GrantKind[] {
  return credential.access ?? (credential.prefixes === undefined ? ['leases', 'admin'] : ['leases']);
}

/** Whether a credential's grants include the watch, as grantLeases and grantRead do (grantAdmin does not). */
export function watchesWith(credential: Pick<CredentialGrants, 'prefixes' | 'access'>): boolean {
  return accessOf(credential).some((kind) => kind === 'leases' || kind === 'read');
}

/** Refuses a request (403 FORBIDDEN) when none of its key's grants covers it; undefined when one does. */
export type RouteAuthorizer = (accessKeyId: string, method: string, rawPath: string, route: Route) => ForbiddenError | undefined;

/** Checks every credential's `prefixes` and `access` once, at start; throws naming the one that is wrong. */
export function createRouteAuthorizer(credentials: readonly CredentialGrants[]): RouteAuthorizer {
  const patterns = new Map<string, { granted: GrantedRoute[]; described: string }>();
  credentials.forEach((credential, i) => {
    const access = accessOf(credential);
    for (const kind of access) {
      if (!GRANT_KINDS.includes(kind)) {
        throw new Error(`Expected \`sigv4.credentials[${i}].access\` to hold only ${GRANT_KINDS.map((k) => `'${k}'`).join(', ')}, got ${JSON.stringify(kind)}.`);
      }
    }
    const prefixes = credential.prefixes === undefined ? [undefined] : credential.prefixes;
    const granted = access.flatMap((kind) =>
      prefixes.flatMap((prefix) => {
        try {
          return grantedRoutes(kind, prefix);
        } catch (error) {
          throw new Error(`Expected \`sigv4.credentials[${i}].prefixes\` to hold lease-name prefixes: ${(error as Error).message}`, { cause: error });
        }
      }),
    );
    const scope = credential.prefixes === undefined ? 'every name' : credential.prefixes.map((p) => `"${p}"`).join(', ') || 'no name';
    patterns.set(credential.accessKeyId, { granted, described: `${access.join(', ')} for ${scope}` });
  });
  return function authorizeRoute(accessKeyId, method, rawPath, route) {
    const grants = patterns.get(accessKeyId);
    if (grants?.granted.some((pattern) => grantCovers(pattern, method, rawPath))) return undefined;
    const held = grants === undefined ? '' : ` (its grants: ${grants.described})`;
    return new ForbiddenError(`Access key "${accessKeyId}" is not granted ${route.method} ${route.path} on this path${held}; IAM would refuse it the same way.`);
  };
}
