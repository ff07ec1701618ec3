import { readFileSync } from 'node:fs';

/**
 * What the members of a lease group believed (`--groups`): `ownership.jsonl` beside the
 * history, one JSON object per line, every time on the harness clock (harness-clock.ts). The
 * history holds what the members *sent* (their acquires, renewals and handoffs of the partition
 * leases are ordinary lease operations); this file holds what each member *believed*, as the SDK
 * told it, which no request shows: a member's belief ends at its local deadline even when no
 * request and no callback marks that instant (a paused process).
 *
 * Two record types:
 * - `group` (first line): the group's partitions and settings, and the liveness window's ends;
 * - `ownership`: one step of one member's belief in one partition, under one token:
 *   - `assigned`: `onAssigned` ran: the belief began; `deadlineMs` is its local deadline then;
 *   - `deadline`: the local deadline moved (a renewal landed) to `deadlineMs`;
 *   - `revoked`: `onRevoked` ran (with `reason`): the belief had ended.
 *
 * So a belief lasts from `assigned` until the earlier of `revoked` and the last `deadlineMs`
 * recorded before it: `isOwner()` is false from the deadline on, whether or not anything ran then.
 */

export const OWNERSHIP_EVENTS = ['assigned', 'deadline', 'revoked'] as const;
export type OwnershipEvent = (typeof OWNERSHIP_EVENTS)[number];

export interface OwnershipRecord {
  type: 'ownership';
  /** The member's process (its incarnation, e.g. "w3r2"), which is also its holder id. */
  process: string;
  /** The partition's lease name, `<group>.p.<partition>`, as in the history. */
  lease: string;
  token: number;
  event: OwnershipEvent;
  /** When the member recorded it (harness clock). */
  atMs: number;
  /** assigned, deadline: from this instant `isOwner()` is false, unless a later record moves it (harness clock). */
  deadlineMs?: number;
  /** revoked: the loss reason (`released`, `stopped`, `expired`, `paused`, `revoked`, …). */
  reason?: string;
}

export interface GroupRunRecord {
  type: 'group';
  group: string;
  /** The partitions' lease names, in the group's order. */
  leases: string[];
  ttlMs: number;
  /** The members' `balanceEveryMs`: each reads the group at least this often. */
  balanceEveryMs: number;
  /** When every fault had healed and every member process was running again; null: the run never got there. */
  healedAtMs: number | null;
  /** When the harness began stopping the members: the end of the window in which liveness is judged; null: never. */
  stoppingAtMs: number | null;
}

export interface OwnershipLog {
  group: GroupRunRecord;
  records: OwnershipRecord[];
}

export class OwnershipFormatError extends Error {
  override name = 'OwnershipFormatError';
}

/** Checks one parsed line; throws OwnershipFormatError naming the line and the field. */
export function validateOwnershipLine(value: unknown, where: string): OwnershipRecord | GroupRunRecord {
  const fail = (reason: string): never => {
    throw new OwnershipFormatError(`${where}: ${reason} (got ${JSON.stringify(value)})`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('expected a JSON object');
  const r = value as Record<string, unknown>;
  const finite = (key: string) => typeof r[key] === 'number' && Number.isFinite(r[key]);
  const text = (key: string) => typeof r[key] === 'string' && r[key] !== '';
  if (r.type === 'group') {
    if (!text('group')) fail('`group` must be a non-empty string');
    if (!Array.isArray(r.leases) || r.leases.length === 0 || !r.leases.every((l) => typeof l === 'string' && l !== '')) fail('`leases` must list the partitions’ lease names');
    if (!finite('ttlMs') || !finite('balanceEveryMs')) fail('`ttlMs` and `balanceEveryMs` must be numbers');
    if (r.healedAtMs !== null && !finite('healedAtMs')) fail('`healedAtMs` must be a number or null');
    if (r.stoppingAtMs !== null && !finite('stoppingAtMs')) fail('`stoppingAtMs` must be a number or null');
    return r as unknown as GroupRunRecord;
  }
  if (r.type !== 'ownership') fail('`type` must be "group" or "ownership"');
  if (!text('process') || !text('lease')) fail('`process` and `lease` must be non-empty strings');
  if (!Number.isSafeInteger(r.token)) fail('`token` must be an integer');
  if (!OWNERSHIP_EVENTS.includes(r.event as OwnershipEvent)) fail(`\`event\` must be one of ${OWNERSHIP_EVENTS.join(', ')}`);
  if (!finite('atMs')) fail('`atMs` must be a number');
  if (r.event !== 'revoked' && !finite('deadlineMs')) fail(`\`deadlineMs\` is required on ${r.event}`);
  if (r.event === 'revoked' && !text('reason')) fail('`reason` is required on revoked');
  return r as unknown as OwnershipRecord;
}

/** Parses a whole ownership.jsonl text: exactly one `group` record, any number of `ownership` records. */
export function parseOwnership(text: string, source = 'ownership'): OwnershipLog {
  let group: GroupRunRecord | undefined;
  const records: OwnershipRecord[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    const where = `${source}:${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new OwnershipFormatError(`${where}: not valid JSON (${(error as Error).message})`);
    }
    const record = validateOwnershipLine(value, where);
    if (record.type === 'ownership') records.push(record);
    else if (group !== undefined) throw new OwnershipFormatError(`${where}: a second \`group\` record`);
    else group = record;
  });
  if (group === undefined) throw new OwnershipFormatError(`${source}: no \`group\` record`);
  return { group, records };
}

export function readOwnership(path: string): OwnershipLog {
  return parseOwnership(readFileSync(path, 'utf8'), path);
}

/** The file's text: the group record first, then the records by time. */
export function formatOwnership(log: OwnershipLog): string {
  const records = [...log.records].sort((a, b) => a.atMs - b.atMs);
  return [log.group, ...records].map((r) => `${JSON.stringify(r)}\n`).join('');
}
