import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { UnavailableError } from '../../client/src/protocol/index.js';
import { defaultSemaphoreTableName } from '../../functions/config.js';
import { errorResponse } from '../../functions/http/responses.js';
import { ensureLeaseTable, ensureSemaphoreTable, ensureSubscriptionTable } from '../../functions/lease-table.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal, type DynamoDBLocal } from '../dynamodb/dynamodb-local.js';
import { startLocalServer, type LocalServer, type LocalServerOptions } from '../server.js';
import { WATCH_PATH } from '../websocket-gateway.js';
import { openRegionGate, type GateState, type OutageMode, type RegionGate } from './region-gate.js';
import { DEFAULT_CLOCK_OFFSETS_MS, REGION_COUNTS, REGION_NAMES } from './region-set.js';
import { createWriteConflictInjector, type ConflictInjection, type WriteConflictInjector } from './write-conflicts.js';

export { DEFAULT_CLOCK_OFFSETS_MS, REGION_COUNTS, REGION_NAMES } from './region-set.js';

/**
 * Three "Regional" leasehold APIs on one machine, as a deployment over a DynamoDB global table with
 * multi-Region strong consistency (MRSC) presents itself to clients: every Region serves the same
 * lease and semaphore tables and sees every other Region's writes at once (here: one DynamoDB Local,
 * one logical strongly consistent store), while each runs on its own clock, pushes the watch from
 * its own replica's stream to its own subscribers, and fails on its own. Each Region can be taken
 * down (refused, blackholed or answering 503) and brought back (region-gate.ts), and its store can
 * be made to meet `ReplicatedWriteConflictException`s (write-conflicts.ts).
 */

export interface LocalRegionsOptions {
  /** 3 (three replicas) or 2 (two replicas and a witness, which serves no API). Default 3. */
  count?: number;
  /** Region i listens on basePort + i (127.0.0.1). Default 0: each on a free port of its own. */
  basePort?: number;
  /** One offset per Region, in ms. Default DEFAULT_CLOCK_OFFSETS_MS. */
  clockOffsetsMs?: readonly number[];
  /** A running DynamoDB Local. Default: one is started here, and stopped by `close()`. */
  dynamodbEndpoint?: string;
  /** The lease table every Region serves (created if missing). Default `leasehold-leases`. */
  tableName?: string;
  /** Default: the lease table's name with `-semaphores`. */
  semaphoreTableName?: string;
  /** Each Region's own subscriptions table is this name with `-{region}`. Default `leasehold-subscriptions`. */
  subscriptionTableName?: string;
  /** Each Region's watch: its own WebSocket, subscriptions and stream poller. `false`: no watch. Default on. */
  watch?: false | Omit<NonNullable<LocalServerOptions['watch']>, 'subscriptionTableName'>;
  /** Further options for every Region's local server (logRequests, latency, throttle, sigv4, ...). */
  server?: Omit<
    LocalServerOptions,
    'port' | 'host' | 'publicPort' | 'tableName' | 'semaphoreTableName' | 'dynamodbEndpoint' | 'region' | 'credentials' | 'clockOffsetMs' | 'watch' | 'configureDynamoDB' | 'logName'
  >;
}

export interface LocalRegion {
  /** us-east-1, us-east-2, us-west-2. */
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly clockOffsetMs: number;
  /** The Region's watch (undefined without one). */
  readonly watchUrl: string | undefined;
  state(): GateState;
  /** Takes the Region's API and watch down: see region-gate.ts for what each mode does. */
  down(mode: OutageMode): Promise<void>;
  up(): Promise<void>;
  /** The Region's store meets `ReplicatedWriteConflictException` on its next `count` writes, or with `probability`. */
  injectReplicatedWriteConflicts(what: ConflictInjection): void;
  /** Conflicts injected into this Region's writes since start. */
  injectedConflicts(): number;
  /** The Region's server's counts (requests aborted, answered 5xx). */
  stats(): ReturnType<LocalServer['stats']>;
}

export interface LocalRegions {
  readonly regions: readonly LocalRegion[];
  readonly dynamodbEndpoint: string;
  readonly tableName: string;
  readonly semaphoreTableName: string;
  /** The Region of that name; throws naming the Regions there are. */
  region(name: string): LocalRegion;
  /** The same injection in every Region (each counts its own `count`). */
  injectReplicatedWriteConflicts(what: ConflictInjection): void;
  close(): Promise<void>;
}

export async function startLocalRegions(options: LocalRegionsOptions = {}): Promise<LocalRegions> {
  const count = options.count ?? 3;
  if (!REGION_COUNTS.includes(count)) {
    throw new TypeError(`Expected \`count\` to be 3 (three replicas) or 2 (two replicas and a witness), got ${String(count)}.`);
  }
  const offsets = options.clockOffsetsMs ?? DEFAULT_CLOCK_OFFSETS_MS;
  if (offsets.length < count || !offsets.slice(0, count).every(Number.isFinite)) {
    throw new TypeError(`Expected \`clockOffsetsMs\` to hold ${count} finite numbers of milliseconds, got ${JSON.stringify(offsets)}.`);
  }
  const basePort = options.basePort ?? 0;
  if (!Number.isInteger(basePort) || basePort < 0 || basePort + count - 1 > 65535) {
    throw new TypeError(`Expected \`basePort\` to be an integer from 0 to ${65536 - count}, got ${String(basePort)}.`);
  }
  const tableName = options.tableName ?? 'leasehold-leases';
  const semaphoreTableName = options.semaphoreTableName ?? defaultSemaphoreTableName(tableName);
  const subscriptionPrefix = options.subscriptionTableName ?? 'leasehold-subscriptions';

  let db: DynamoDBLocal | undefined;
  const started: Array<{ server: LocalServer; gate: RegionGate }> = [];
  const stopAll = async () => {
    for (const { server, gate } of started.splice(0)) {
      await gate.close();
      await server.close();
    }
    await db?.stop();
  };
  try {
    if (options.dynamodbEndpoint === undefined) db = await startDynamoDBLocal();
    const dynamodbEndpoint = options.dynamodbEndpoint ?? (db as DynamoDBLocal).endpoint;
    const names = REGION_NAMES.slice(0, count);
    const raw = new DynamoDBClient({ endpoint: dynamodbEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    try {
      await ensureLeaseTable(raw, tableName);
      await ensureSemaphoreTable(raw, semaphoreTableName);
      if (options.watch !== false) for (const name of names) await ensureSubscriptionTable(raw, `${subscriptionPrefix}-${name}`);
    } finally {
      raw.destroy();
    }

    const regions: LocalRegion[] = [];
    for (const [i, name] of names.entries()) {
      const conflicts = createWriteConflictInjector();
      const clockOffsetMs = offsets[i] as number;
      const publicPort = basePort === 0 ? 0 : basePort + i;
      const region = await startRegion({ name, publicPort, clockOffsetMs, conflicts, dynamodbEndpoint, tableName, semaphoreTableName, subscriptionPrefix, options });
      started.push(region);
      regions.push(region.region);
    }
    const byName = new Map(regions.map((region) => [region.name, region]));
    return {
      regions,
      dynamodbEndpoint,
      tableName,
      semaphoreTableName,
      region(name) {
        const region = byName.get(name);
        if (region === undefined) throw new RangeError(`No Region "${name}": the Regions are ${[...byName.keys()].join(', ')}.`);
        return region;
      },
      injectReplicatedWriteConflicts(what) {
        for (const region of regions) region.injectReplicatedWriteConflicts(what);
      },
      close: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

interface RegionSetup {
  name: string;
  publicPort: number;
  clockOffsetMs: number;
  conflicts: WriteConflictInjector;
  dynamodbEndpoint: string;
  tableName: string;
  semaphoreTableName: string;
  subscriptionPrefix: string;
  options: LocalRegionsOptions;
}

/** One Region: its server on a private port, behind its gate on the public one. */
async function startRegion(setup: RegionSetup): Promise<{ server: LocalServer; gate: RegionGate; region: LocalRegion }> {
  const { name, conflicts, options } = setup;
  // The gate listens first: with port 0 the public port is known only then, and the server's page names it.
  let serverPort = 0;
  const gate = await openRegionGate({
    port: setup.publicPort,
    host: '127.0.0.1',
    target: () => ({ host: '127.0.0.1', port: serverPort }),
    unavailable: () => errorResponse(new UnavailableError(`Region ${name} is unavailable (taken down locally); retry, or try another Region.`)),
  });
  let server: LocalServer;
  try {
    server = await startLocalServer({
      ...options.server,
      port: 0,
      publicPort: gate.port,
      tableName: setup.tableName,
      semaphoreTableName: setup.semaphoreTableName,
      dynamodbEndpoint: setup.dynamodbEndpoint,
      // DynamoDB Local keeps one database per access key and Region: every Region's client names
      // the same ones, so all of them share one store, as MRSC replicas share one logical table.
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      // Each request log line names the Region that served it.
      logName: name,
      clockOffsetMs: setup.clockOffsetMs,
      configureDynamoDB: (client) => conflicts.install(client),
      ...(options.watch === false ? {} : { watch: { ...options.watch, subscriptionTableName: `${setup.subscriptionPrefix}-${name}` } }),
    });
  } catch (error) {
    await gate.close();
    throw error;
  }
  serverPort = server.port;
  const url = `http://127.0.0.1:${gate.port}`;
  const region: LocalRegion = {
    name,
    url,
    port: gate.port,
    clockOffsetMs: setup.clockOffsetMs,
    watchUrl: options.watch === false ? undefined : `${url.replace('http', 'ws')}${WATCH_PATH}`,
    state: () => gate.state(),
    down: (mode) => gate.down(mode),
    up: () => gate.up(),
    injectReplicatedWriteConflicts: (what) => conflicts.inject(what),
    injectedConflicts: () => conflicts.injected(),
    stats: () => server.stats(),
  };
  return { server, gate, region };
}
