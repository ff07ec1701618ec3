/// <reference types="node" />
import type { GrantRef } from '../api/lease-client.js';
import { LIMITS, PREFIX_PATTERN, type JsonValue, type PublicLease } from '../protocol/index.js';
import { EXIT_CODE_HELP, ExitCode, UsageError } from './exit-codes.js';
import { formatLease, formatLeaseTable, formatMs } from './format.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, checkHolder, connect, parseCommandLine, parseDuration, parseTtl, readStdin, requireName } from './options.js';

/**
 * The one-shot commands: describe, list, acquire, renew, release, revoke. Each prints a human-readable
 * answer (or, with --json, the API's JSON on one line) and returns its exit code; errors are thrown
 * and printed by main with their exit code.
 */

export type Command = (argv: string[]) => Promise<number>;

const JSON_OPTION = { json: { type: 'boolean' } } as const;

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

// ---------------------------------------------------------------------------------------------
export const DESCRIBE_HELP = `Usage: leasehold describe NAME [--json]
       leasehold describe --rwlock NAME [--json]

Shows a lease's public state: holder, fencing token, time left, transitions (never its lease id).

  --rwlock   NAME is a shared/exclusive lease (a rwlock, a resource of its own beside the lease of
             the same name): its mode, phase token, each holder with its mode, token and time
             left, and any waiting writer
  --json     print the API's answer {"lease": {...}} (with --rwlock {"rwlock": {...}}) on one line

Examples:
  $ leasehold describe my-app:cron-leader
  $ leasehold describe --rwlock reports:db

${CONNECTION_HELP}

${EXIT_CODE_HELP}`;

export const describeCommand: Command = async (argv) => {
  const { values, positionals } = parseCommandLine('describe', argv, { ...CONNECTION_OPTIONS, ...JSON_OPTION, rwlock: { type: 'boolean' } });
  if (values.rwlock) return (await import('./rwlock-commands.js')).describeRwlock(positionals, values);
  const name = requireName(positionals, 'describe');
  const { client } = connect(values, 'describe');
  const lease = await client.describe(name);
  if (values.json) printJson({ lease });
  else print(formatLease(lease));
  return ExitCode.OK;
};

// ---------------------------------------------------------------------------------------------
export const LIST_HELP = `Usage: leasehold list [--prefix P] [--limit N] [--json]

Lists leases, following the service's pages until done. Meant for operators: the service scans
its table, so prefer describe on hot paths.

  --prefix P   only names that start with P (e.g. my-app:)
  --limit N    at most N leases (default: all)
  --json       print {"leases": [...]} on one line

${CONNECTION_HELP}

${EXIT_CODE_HELP}`;

export const listCommand: Command = async (argv) => {
  const { values, positionals } = parseCommandLine('list', argv, {
    ...CONNECTION_OPTIONS,
    ...JSON_OPTION,
    prefix: { type: 'string' },
    limit: { type: 'string' },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}" (use --prefix to filter).`, 'list');
  const prefix = values.prefix;
  if (prefix !== undefined && !PREFIX_PATTERN.test(prefix)) {
    throw new UsageError(`--prefix must be up to 200 characters of A-Z a-z 0-9 . _ : - (got "${prefix}").`, 'list');
  }
  let limit = Infinity;
  if (values.limit !== undefined) {
    if (!/^[0-9]+$/.test(values.limit) || Number(values.limit) < 1) throw new UsageError(`--limit must be a positive integer (got "${values.limit}").`, 'list');
    limit = Number(values.limit);
  }
  const { client } = connect(values, 'list');
  const leases: PublicLease[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.list({
      ...(prefix ? { prefix } : {}),
      limit: Math.min(LIMITS.listMaxLimit, Number.isFinite(limit) ? limit - leases.length : LIMITS.listDefaultLimit),
      ...(cursor ? { cursor } : {}),
    });
    leases.push(...page.leases);
    cursor = page.nextCursor;
  } while (cursor !== undefined && leases.length < limit);
  const shown = leases.slice(0, limit).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (values.json) printJson({ leases: shown });
  else if (shown.length === 0) print(prefix ? `no leases with prefix "${prefix}"` : 'no leases');
  else print(formatLeaseTable(shown));
  return ExitCode.OK;
};

// ---------------------------------------------------------------------------------------------
export const ACQUIRE_HELP = `Usage: leasehold acquire NAME --holder H [--ttl 15s] [--metadata JSON] [--lock-delay D] [--json]

Asks for the lease once. On success prints the grant: its fencing token and its lease id (the
secret that authorizes renew and release; keep it). If someone else holds it, prints who and when
it may be free, and exits 3.

  --holder H       who you are, shown to everyone (1-128 printable ASCII, no spaces); required
  --ttl D          time to live: 15s (default), 1500ms, 2m; from 1s to 1h
  --metadata JSON  published with the grant, e.g. '{"addr":"10.0.0.7:8080"}' (at most 2 KiB)
  --lock-delay D   after an expiry, keep the lease unavailable this long (0 to 60s)
  --json           print {"acquired": true, "lease": {...}} (or acquired false) on one line;
                   pipe it into \`leasehold renew|release NAME --from-stdin\`

Example:
  $ leasehold acquire my-app:cron-leader --holder worker-1 --ttl 30s --json > grant.json
  $ leasehold renew my-app:cron-leader --from-stdin < grant.json

${CONNECTION_HELP}

${EXIT_CODE_HELP}`;

export const acquireCommand: Command = async (argv) => {
  const { values, positionals } = parseCommandLine('acquire', argv, {
    ...CONNECTION_OPTIONS,
    ...JSON_OPTION,
    holder: { type: 'string' },
    ttl: { type: 'string' },
    metadata: { type: 'string' },
    'lock-delay': { type: 'string' },
  });
  const name = requireName(positionals, 'acquire');
  if (values.holder === undefined) throw new UsageError('--holder is required: who is acquiring, e.g. --holder worker-1.', 'acquire');
  const holder = checkHolder(values.holder, 'acquire');
  const ttlMs = parseTtl(values.ttl ?? '15s', 'acquire');
  let metadata: JsonValue | undefined;
  if (values.metadata !== undefined) {
    try {
      metadata = JSON.parse(values.metadata) as JsonValue;
    } catch {
      throw new UsageError(`--metadata must be JSON, e.g. '{"addr":"10.0.0.7"}' (got ${values.metadata}).`, 'acquire');
    }
  }
  const lockDelayMs = values['lock-delay'] === undefined ? undefined : parseDuration(values['lock-delay'], 'lock-delay', 'acquire');
  const { client } = connect(values, 'acquire');
  const result = await client.acquire(name, {
    holder,
    ttlMs,
    ...(metadata !== undefined ? { metadata } : {}),
    ...(lockDelayMs !== undefined ? { lockDelayMs } : {}),
  });
  if (values.json) {
    printJson(result);
  } else if (result.acquired) {
    const { lease } = result;
    print(`acquired ${lease.name} as ${lease.holder}: token ${lease.token}, expires in ${formatMs(lease.remainingMs)}\n`);
    print(formatLease(lease));
    print(`\nrenew:   leasehold renew ${lease.name} --lease-id ${lease.leaseId} --token ${lease.token}`);
    print(`release: leasehold release ${lease.name} --lease-id ${lease.leaseId} --token ${lease.token}`);
  } else {
    const { lease, retryAfterMs } = result;
    const who = lease.holder === null ? 'not available yet (lock-delay or a handoff reservation)' : `held by ${lease.holder}`;
    process.stderr.write(`leasehold: ${lease.name} is ${who} (token ${lease.token}); it may be acquired in ${formatMs(retryAfterMs)}.\n`);
  }
  return result.acquired ? ExitCode.OK : ExitCode.HELD;
};

// ---------------------------------------------------------------------------------------------
const GRANT_FLAGS = `  --lease-id ID    the lease id from acquire
  --token T        the fencing token from acquire
  --from-stdin     read both from the JSON on stdin instead: the output of \`acquire --json\`
                   or \`renew --json\` ({"lease": {"leaseId", "token", ...}})`;

export const RENEW_HELP = `Usage: leasehold renew NAME (--lease-id ID --token T | --from-stdin) [--ttl D] [--json]

Extends a grant you hold by its ttl (or --ttl). The token does not change. Exits 4 if the grant is
no longer current (expired, released or taken over): stop the work it protected.

${GRANT_FLAGS}
  --ttl D          new time to live (default: the grant's own)
  --json           print {"lease": {...}} on one line (it can be piped into renew again)

Example:
  $ leasehold acquire jobs:compact --holder w1 --json | leasehold renew jobs:compact --from-stdin

${CONNECTION_HELP}

${EXIT_CODE_HELP}`;

export const renewCommand: Command = async (argv) => {
  const { values, positionals } = parseCommandLine('renew', argv, { ...CONNECTION_OPTIONS, ...JSON_OPTION, ...GRANT_OPTIONS, ttl: { type: 'string' } });
  const name = requireName(positionals, 'renew');
  const grant = await grantFrom(values, name, 'renew');
  const ttlMs = values.ttl === undefined ? undefined : parseTtl(values.ttl, 'renew');
  const { client } = connect(values, 'renew');
  const lease = await client.renew(name, { ...grant, ...(ttlMs !== undefined ? { ttlMs } : {}) });
  if (values.json) printJson({ lease });
  else print(`renewed ${lease.name}: token ${lease.token}, expires in ${formatMs(lease.remainingMs)}`);
  return ExitCode.OK;
};

export const RELEASE_HELP = `Usage: leasehold release NAME (--lease-id ID --token T | --from-stdin) [--json]

Gives the lease up so the next holder need not wait for its expiry. Releasing twice is harmless;
exits 4 if someone else holds it by now.

${GRANT_FLAGS}
  --json           print {"released": true, "lease": {...}} on one line

${CONNECTION_HELP}

${EXIT_CODE_HELP}`;

export const releaseCommand: Command = async (argv) => {
  const { values, positionals } = parseCommandLine('release', argv, { ...CONNECTION_OPTIONS, ...JSON_OPTION, ...GRANT_OPTIONS });
  const name = requireName(positionals, 'release');
  const grant = await grantFrom(values, name, 'release');
  const { client } = connect(values, 'release');
  const lease = await client.release(name, grant);
  if (values.json) printJson({ released: true, lease });
  else print(`released ${lease.name} (token ${lease.token}): available now`);
  return ExitCode.OK;
};

export const REVOKE_HELP = `Usage: leasehold revoke NAME --reason TEXT [--force] [--token N] [--json]
       leasehold revoke --rwlock NAME --reason TEXT [--force] [--token N] [--json]

For operators: takes the current grant away from its holder (one that renews but no longer works),
and records who did it, when and why on the lease until it is next granted (describe shows it).
Needs the construct's grantAdmin (grantLeases does not allow it).

It revokes one grant by its fencing token: the one describe shows first (or --token), so a revoke
that reaches the service late, after the lease moved on to another holder, ends nothing (exit 4,
reason superseded). That is also what makes it safe to retry and to send on to another endpoint.

  --reason TEXT   why, 1-${LIMITS.revokeReasonMaxLength} printable characters (required; kept on the lease and in the log)
  --force         make the lease available at once. Without it (safe): the holder can no longer
                  renew and the lease becomes available at its current expiry, after the holder's
                  own deadline. Forced relies on fencing: the old holder may believe it leads until
                  its deadline, and only fenced writes keep its late work out. A lease a handoff
                  left reserved (nobody holds it) is freed too: reservation and claim end.
  --token N       the grant to revoke, by the token describe printed (default: describe it now)
  --rwlock        NAME is a shared/exclusive lease: revoke every live grant of the phase whose token
                  \`describe --rwlock\` shows (or --token); --force releases them all at once
  --json          print the API's answer {"lease": {..., "revoked": {...}}} on one line
                  (with --rwlock {"rwlock": {..., "revoked": {...}}})

Revoking again answers the same record (--force upgrades a safe revoke). Exits 4 if nobody holds the
lease or it moved on past --token, 5 if it was never acquired.

Example:
  $ leasehold revoke my-app:cron-leader --reason "stuck since 02:10, INC-4411"

${CONNECTION_HELP}

${EXIT_CODE_HELP}`;

export const revokeCommand: Command = async (argv) => {
  const options = { ...CONNECTION_OPTIONS, ...JSON_OPTION, reason: { type: 'string' }, force: { type: 'boolean' }, token: { type: 'string' }, rwlock: { type: 'boolean' } } as const;
  const { values, positionals } = parseCommandLine('revoke', argv, options);
  const name = requireName(positionals, 'revoke');
  if (values.reason === undefined) throw new UsageError(`--reason is required: say why the ${values.rwlock ? 'rwlock' : 'lease'} is revoked (it is kept on the ${values.rwlock ? 'grants' : 'lease'}).`, 'revoke');
  const given = values.token === undefined ? undefined : parseToken(values.token, 'revoke', 'describe');
  if (values.rwlock) return (await import('./rwlock-commands.js')).revokeRwlock(name, values, { reason: values.reason, expectedToken: given });
  const { client } = connect(values, 'revoke');
  // The grant the operator acts on is the one they saw: a revoke that lands after it ended is refused.
  const expectedToken = given ?? (await client.describe(name)).token;
  const lease = await client.revoke(name, { reason: values.reason, expectedToken, ...(values.force ? { force: true } : {}) });
  if (values.json) printJson({ lease });
  else {
    const when = lease.revoked.force ? 'available now' : `available in ${formatMs(lease.remainingMs)} (at its expiry)`;
    print(`revoked ${lease.name} (token ${lease.token}) by ${lease.revoked.by}${lease.revoked.force ? ', forced' : ''}: ${when}`);
  }
  return ExitCode.OK;
};

const GRANT_OPTIONS = {
  'lease-id': { type: 'string' },
  token: { type: 'string' },
  'from-stdin': { type: 'boolean' },
} as const;

/** The grant to renew or release: from --lease-id/--token, or from JSON on stdin. */
async function grantFrom(
  values: { 'lease-id'?: string | undefined; token?: string | undefined; 'from-stdin'?: boolean | undefined },
  name: string,
  command: string,
): Promise<GrantRef> {
  if (values['from-stdin']) {
    if (values['lease-id'] !== undefined || values.token !== undefined) {
      throw new UsageError('pass either --from-stdin or --lease-id and --token, not both.', command);
    }
    return grantFromJson(await readStdin(), name, command);
  }
  if (values['lease-id'] === undefined || values.token === undefined) {
    throw new UsageError('--lease-id and --token are required (both printed by acquire), or pipe `acquire --json` in with --from-stdin.', command);
  }
  return { leaseId: values['lease-id'], token: parseToken(values.token, command) };
}

function parseToken(value: string, command: string, printedBy = 'acquire'): number {
  const token = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(token) || token < 1) {
    throw new UsageError(`--token must be the positive integer printed by ${printedBy} (got "${value}").`, command);
  }
  return token;
}

/** Accepts `{ lease: { leaseId, token, name } }` (acquire/renew --json) or a bare grant. */
export function grantFromJson(text: string, name: string, command: string): GrantRef {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError('stdin is not JSON: pipe in the output of `leasehold acquire … --json`.', command);
  }
  const outer = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  if (outer.acquired === false) {
    const lease = outer.lease as { holder?: unknown } | undefined;
    throw new UsageError(`the JSON on stdin is an acquire that did not win (held by ${String(lease?.holder)}): there is no grant to ${command}.`, command);
  }
  const grant = (typeof outer.lease === 'object' && outer.lease !== null ? outer.lease : outer) as Record<string, unknown>;
  if (typeof grant.leaseId !== 'string' || typeof grant.token !== 'number') {
    throw new UsageError('the JSON on stdin has no lease id and token: pipe in the output of `leasehold acquire … --json`.', command);
  }
  if (typeof grant.name === 'string' && grant.name !== name) {
    throw new UsageError(`the grant on stdin is for lease "${grant.name}", not "${name}".`, command);
  }
  return { leaseId: grant.leaseId, token: grant.token };
}
