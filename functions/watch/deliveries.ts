import { BatchGetCommand, BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LeaseEvent } from '../../client/src/protocol/index.js';
import type { WallClock } from '../clock.js';

/**
 * Which connections a route's direct push told of a change (direct-push.ts), so the stream path
 * does not tell them again. One item per change in the subscriptions table: `pk` =
 * `delivered#<lease>`, `sk` = `<type>#<token>#<atMs>` (a change's identity: a safe and then a
 * forced revoke share type and token, never their instant), `connections` (the ids), expiring
 * after `ttlMs` (default 10 minutes: the stream reads a change within seconds, or retries it for at
 * most a day, and a retry a day late telling a watcher twice is what the SDK's own guard is for).
 */
export const DELIVERY_PARTITION_PREFIX = 'delivered#';
const DEFAULT_TTL_MS = 10 * 60 * 1000;
/** BatchGetItem's limit of keys per request; BatchWriteItem's of items. */
const BATCH_GET_MAX_KEYS = 100;
const BATCH_WRITE_MAX_ITEMS = 25;

/** The event types a route pushes directly: a release, a handoff, a forced revoke (its `revoked`). */
export function isPushedDirectly(event: LeaseEvent): boolean {
  return event.type === 'released' || event.type === 'handoff' || (event.type === 'revoked' && event.revoked?.force === true);
}

function keyOf(event: LeaseEvent): { pk: string; sk: string } {
  return { pk: `${DELIVERY_PARTITION_PREFIX}${event.name}`, sk: `${event.type}#${event.token}#${event.atMs}` };
}

export interface DeliveryLogOptions {
  client: DynamoDBDocumentClient;
  tableName: string;
  clock: WallClock;
  ttlMs?: number;
}

export class DeliveryLog {
  constructor(private readonly options: DeliveryLogOptions) {}

  /** Records that `connections` were told of `event` (one write per 25 changes). */
  async record(told: ReadonlyArray<{ event: LeaseEvent; connections: readonly string[] }>, abortSignal?: AbortSignal): Promise<void> {
    const expireAt = Math.ceil((this.options.clock.nowMs() + (this.options.ttlMs ?? DEFAULT_TTL_MS)) / 1000);
    const items = told.filter((t) => t.connections.length > 0).map((t) => ({ ...keyOf(t.event), connections: [...t.connections], expireAt }));
    for (let i = 0; i < items.length; i += BATCH_WRITE_MAX_ITEMS) {
      const batch = items.slice(i, i + BATCH_WRITE_MAX_ITEMS).map((Item) => ({ PutRequest: { Item } }));
      await this.options.client.send(new BatchWriteCommand({ RequestItems: { [this.options.tableName]: batch } }), abortSignal ? { abortSignal } : {});
    }
  }

  /**
   * Whether a connection was told of an event already, for the stream's events that a route may
   * have pushed (one BatchGetItem per 100 changes). Keys left unprocessed twice count as told to
   * nobody: a second push of a hint, which the SDK drops, never a missed one.
   */
  async told(events: readonly LeaseEvent[]): Promise<(event: LeaseEvent, connectionId: string) => boolean> {
    const byKey = new Map<string, ReadonlySet<string>>();
    const nowSec = this.options.clock.nowMs() / 1000;
    const keys = [...new Map(events.filter(isPushedDirectly).map((e) => [`${keyOf(e).pk}\n${keyOf(e).sk}`, keyOf(e)])).values()];
    for (let i = 0; i < keys.length; i += BATCH_GET_MAX_KEYS) {
      let pending: Array<Record<string, unknown>> = keys.slice(i, i + BATCH_GET_MAX_KEYS);
      for (let attempt = 0; attempt < 2 && pending.length > 0; attempt += 1) {
        const out = await this.options.client.send(new BatchGetCommand({ RequestItems: { [this.options.tableName]: { Keys: pending } } }));
        for (const item of out.Responses?.[this.options.tableName] ?? []) {
          if (typeof item.expireAt === 'number' && item.expireAt < nowSec) continue;
          const connections = Array.isArray(item.connections) ? item.connections.filter((c): c is string => typeof c === 'string') : [];
          byKey.set(`${String(item.pk)}\n${String(item.sk)}`, new Set(connections));
        }
        pending = out.UnprocessedKeys?.[this.options.tableName]?.Keys ?? [];
      }
    }
    return (event, connectionId) => {
      const key = keyOf(event);
      return byKey.get(`${key.pk}\n${key.sk}`)?.has(connectionId) ?? false;
    };
  }
}
