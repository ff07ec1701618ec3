import { fork, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { LOCAL_CREDENTIALS, LOCAL_REGION, freePort, startDynamoDBLocal, type DynamoDBLocal } from '../../local/dynamodb/dynamodb-local.js';
import { createFaultProxy, type FaultMode, type FaultProxy } from '../proxy.js';
import type { ApiServerConfig } from './api-server.js';
import type { FenceMode } from './options.js';
import type { WorkerConfig, WorkerMessage } from './worker.js';

/**
 * The processes of a chaos run and the means to hurt them: DynamoDB Local (on-disk data, so a
 * `kill -9` and restart keeps the tables), N instances of the lease API (each its own process and
 * clock offset, on a fixed port so a restart comes back where the proxies expect it), and the
 * workers, each behind fault proxies of its own (lease API, round-robin over the instances, or with
 * Regions one per Region; DynamoDB). (The harness's own operator, which revokes leases, talks to the instances directly.) A killed worker restarts as a new incarnation with a new name (w3 → w3r2), so the
 * history never mixes two processes under one name.
 */

const TSX_LOADER = import.meta.resolve('tsx');
const HERE = fileURLToPath(new URL('.', import.meta.url));

/** Runs a TypeScript entry of this folder as a direct child (no tsx wrapper process: signals hit it). */
function forkEntry(entry: string, env: Record<string, string>, logPath: string): ChildProcess {
  const log = openSync(logPath, 'a');
  try {
    return fork(join(HERE, entry), [], {
      execArgv: ['--import', TSX_LOADER],
      // Its own process group: a Ctrl-C in the terminal reaches the harness only, which then ends
      // the run cleanly (the child still dies with the harness: it exits when IPC disconnects).
      detached: true,
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...env },
      stdio: ['ignore', log, log, 'ipc'],
    });
  } finally {
    closeSync(log); // the child has its own copy
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Waits for a child's first IPC message of `type`; rejects if it exits first or after `timeoutMs`. */
function waitForMessage(child: ChildProcess, type: string, what: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`${what} did not start within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: { type?: string }) => {
      if (message?.type === type) done();
    };
    const onExit = (code: number | null, signal: string | null) => done(new Error(`${what} exited during start (code ${code}, signal ${signal})`));
    const done = (error?: Error) => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve();
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/**
 * How long the `restart-db` fault waits between closing the database's door and stopping it: the
 * emulator finishes the requests it had (milliseconds each) before the SIGTERM.
 */
const DB_QUIESCE_MS = 300;

/**
 * DynamoDB Local behind a door of its own: every client (the API instances, the workers' proxies,
 * the harness) reaches it through a fault proxy on `port`, the emulator itself listening on a port
 * of its own. The door lets the `restart-db` fault refuse clients before the emulator stops.
 */
export class DatabaseNode {
  private handle: DynamoDBLocal | undefined;
  private door: FaultProxy | undefined;
  private emulatorPort: number | undefined;
  constructor(
    readonly port: number,
    private readonly dataDir: string,
  ) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.emulatorPort ??= await freePort();
    this.handle = await startDynamoDBLocal({ port: this.emulatorPort, dataDir: this.dataDir, exitWithParent: true });
    this.door ??= await createFaultProxy({ targetHost: '127.0.0.1', targetPort: this.emulatorPort, listenPort: this.port });
  }

  /** Starts it again if it does not answer (e.g. it died with a Ctrl-C from the terminal). */
  async ensureRunning(): Promise<void> {
    const probe = new DynamoDBClient({
      endpoint: this.endpoint,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      maxAttempts: 1,
      requestHandler: { requestTimeout: 5_000, connectionTimeout: 2_000 },
    });
    try {
      await probe.send(new ListTablesCommand({}));
    } catch {
      await this.crashAndRestart();
    } finally {
      probe.destroy();
    }
  }

  /** kill -9, then start again on the same port and folder. Resolves when it answers again. */
  async crashAndRestart(): Promise<void> {
    const child = this.handle?.process;
    if (child) {
      child.kill('SIGKILL');
      await exited(child);
    }
    await this.start();
  }

  /**
   * The `restart-db` fault: an outage of the database, whose acknowledged writes survive it, as
   * DynamoDB's do. The door refuses every client first (open connections are reset: a request in
   * flight is left unknown to its sender, as in any outage), the emulator gets DB_QUIESCE_MS to
   * finish what it had, then SIGTERM (SIGKILL only if it has not exited in 10 s), and the door opens
   * once it answers again. DynamoDB Local can lose an acknowledged TransactWriteItems when stopped
   * with requests in flight: on kill -9 3 of 5 in a probe, on SIGTERM 1 of 11; with no request in
   * flight, 0 of 10. Such a loss would show as an epoch-fenced charge made twice, not a fault of leasehold.
   */
  async outageAndRestart(): Promise<void> {
    this.door?.setMode({ kind: 'refuse' });
    try {
      const child = this.handle?.process;
      if (child && child.exitCode === null && child.signalCode === null) {
        await new Promise((resolve) => setTimeout(resolve, DB_QUIESCE_MS));
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.kill('SIGTERM');
        await exited(child);
        clearTimeout(timer);
      }
      await this.start();
    } finally {
      this.door?.setMode({ kind: 'pass' });
    }
  }

  async stop(): Promise<void> {
    await this.handle?.stop();
    await this.door?.close();
  }

  killNow(): void {
    this.handle?.process.kill('SIGKILL');
    void this.door?.close();
  }
}

export class ApiNode {
  private child: ChildProcess | undefined;
  readonly name: string;
  constructor(
    readonly index: number,
    readonly port: number,
    public clockOffsetMs: number,
    private readonly config: { tableName: string; dynamodbEndpoint: string; logDir: string; latency?: ApiServerConfig['latency'] },
  ) {
    this.name = `api-${index + 1}`;
  }

  async start(): Promise<void> {
    const env: ApiServerConfig = {
      port: this.port,
      clockOffsetMs: this.clockOffsetMs,
      tableName: this.config.tableName,
      dynamodbEndpoint: this.config.dynamodbEndpoint,
      ...(this.config.latency ? { latency: this.config.latency } : {}),
    };
    const child = forkEntry('api-server.ts', { CHAOS_API: JSON.stringify(env) }, join(this.config.logDir, `${this.name}.log`));
    this.child = child;
    await waitForMessage(child, 'listening', this.name, 60_000);
  }

  /** Sends `signal` and waits for the process to be gone. */
  async kill(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited(child);
    clearTimeout(timer);
  }

  killNow(): void {
    this.child?.kill('SIGKILL');
  }
}

export interface WorkerNodeOptions {
  index: number;
  leases: string[];
  ttlMs: number;
  apiPorts: number[];
  dbPort: number;
  journalDir: string;
  logDir: string;
  fenceMode: FenceMode;
  unsafeNoFence: boolean;
  batchPrefix?: string;
  semaphore?: { name: string; limit: number };
  /** `--priorities`: each incarnation's priority per lease. */
  prioritiesOf?: (incarnation: string) => Record<string, number>;
  /** `--groups`: every incarnation is a member of the lease group (`leases` are its partitions' lease names). */
  group?: { partitions: number; balanceEveryMs: number; unsafeClockRate?: number; load?: boolean };
  /** `--rw`: every incarnation takes grants of these rwlocks instead of running Leaders (`leases` is empty). */
  rw?: { names: string[] };
  /**
   * `--regions`: each API instance is a Region's API, and this worker's SDK gets them all as
   * `endpoints` in this order (indices into `apiPorts`, its preferred Region first), each through a
   * proxy of its own.
   */
  regionOrder?: number[];
  onMessage: (node: WorkerNode, message: WorkerMessage) => void;
  onExit: (node: WorkerNode, incarnation: string, code: number | null, signal: string | null) => void;
  /** Every chunk a client of this worker's proxies sends (for stop-while-in-flight). */
  onRequestBytes: (node: WorkerNode, data: Buffer, via: 'api' | 'db') => void;
}

/** One worker slot: its proxies live as long as the run; its process may be killed and restarted. */
export class WorkerNode {
  readonly baseName: string;
  private child: ChildProcess | undefined;
  private incarnation = 0;
  name: string;
  /** One proxy to the lease API (round-robin over the instances), or with Regions one per Region, by Region index. */
  apiProxies: FaultProxy[] = [];
  dbProxy!: FaultProxy;
  /** The worker's own network fault, and the Regions that are down (`region-outage`): the proxies' modes derive from both. */
  private network: FaultMode = { kind: 'pass' };
  private readonly regionsDown = new Map<number, FaultMode>();
  /** Journals of every incarnation, for the merge. */
  readonly journals: string[] = [];
  alive = false;
  stopped = false;

  constructor(private readonly options: WorkerNodeOptions) {
    this.baseName = `w${options.index + 1}`;
    this.name = this.baseName;
  }

  get index(): number {
    return this.options.index;
  }

  async openProxies(): Promise<void> {
    const onClientData = (data: Buffer) => this.options.onRequestBytes(this, data, 'api');
    if (this.options.regionOrder === undefined) {
      this.apiProxies = [
        await createFaultProxy({
          targets: this.options.apiPorts.map((port) => ({ host: '127.0.0.1', port })),
          // Like a load balancer: an instance that is down (restart-api) is skipped for new connections.
          skipRefusingTargets: true,
          onClientData,
        }),
      ];
    } else {
      // A Region's API that is down (restart-api) refuses: the SDK, not the proxy, moves on.
      this.apiProxies = await Promise.all(this.options.apiPorts.map((port) => createFaultProxy({ targetHost: '127.0.0.1', targetPort: port, onClientData })));
    }
    this.dbProxy = await createFaultProxy({
      targetHost: '127.0.0.1',
      targetPort: this.options.dbPort,
      onClientData: (data) => this.options.onRequestBytes(this, data, 'db'),
    });
  }

  /** Starts a new incarnation; resolves when it says it is ready. */
  async start(): Promise<void> {
    this.incarnation += 1;
    this.name = this.incarnation === 1 ? this.baseName : `${this.baseName}r${this.incarnation}`;
    const journalPath = join(this.options.journalDir, `${this.name}.jsonl`);
    this.journals.push(journalPath);
    const urlOf = (proxy: FaultProxy) => `http://127.0.0.1:${proxy.port}`;
    const order = this.options.regionOrder;
    const config: WorkerConfig = {
      name: this.name,
      apiUrl: urlOf(this.apiProxies[0]!),
      ...(order === undefined ? {} : { regions: order.map((r) => ({ url: urlOf(this.apiProxies[r]!), name: regionName(r) })) }),
      dbEndpoint: `http://127.0.0.1:${this.dbProxy.port}`,
      leases: this.options.leases,
      ttlMs: this.options.ttlMs,
      journalPath,
      fenceMode: this.options.fenceMode,
      unsafeNoFence: this.options.unsafeNoFence,
      ...(this.options.batchPrefix === undefined ? {} : { batchPrefix: this.options.batchPrefix }),
      ...(this.options.semaphore === undefined ? {} : { semaphore: this.options.semaphore }),
      ...(this.options.prioritiesOf === undefined ? {} : { priorities: this.options.prioritiesOf(this.name) }),
      ...(this.options.group === undefined ? {} : { group: this.options.group }),
      ...(this.options.rw === undefined ? {} : { rw: this.options.rw }),
    };
    const child = forkEntry('worker.ts', { CHAOS_WORKER: JSON.stringify(config) }, join(this.options.logDir, `${this.name}.log`));
    this.child = child;
    this.stopped = false;
    const incarnation = this.name;
    child.on('message', (message: WorkerMessage) => this.options.onMessage(this, message));
    child.once('exit', (code, signal) => {
      if (this.child === child) this.alive = false;
      this.options.onExit(this, incarnation, code, signal);
    });
    this.alive = true;
    await waitForMessage(child, 'ready', this.name, 60_000);
  }

  pid(): number | undefined {
    return this.child?.pid;
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.alive) return;
    this.child?.kill(signal);
    if (signal === 'SIGSTOP') this.stopped = true;
    if (signal === 'SIGCONT') this.stopped = false;
  }

  /** kill -9; resolves when the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.alive) return;
    this.alive = false;
    child.kill('SIGKILL');
    await exited(child);
  }

  /** The clean end: SIGCONT (if stopped), SIGTERM (the worker releases its leases), SIGKILL after `graceMs`. */
  async terminate(graceMs: number): Promise<void> {
    const child = this.child;
    if (!child || !this.alive) return;
    if (this.stopped) this.signal('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited(child);
    clearTimeout(timer);
    this.alive = false;
  }

  killNow(): void {
    this.child?.kill('SIGCONT');
    this.child?.kill('SIGKILL');
  }

  setNetwork(mode: FaultMode): void {
    this.network = mode;
    this.applyModes();
  }

  /** `region-outage`: Region `region`'s API is down (`mode`) for this worker, or up again (undefined). */
  setRegionDown(region: number, mode: FaultMode | undefined): void {
    if (mode === undefined) this.regionsDown.delete(region);
    else this.regionsDown.set(region, mode);
    this.applyModes();
  }

  /** A partitioned worker reaches nothing, a down Region included; otherwise a down Region's mode wins over the worker's own. */
  private applyModes(): void {
    this.dbProxy.setMode(this.network);
    this.apiProxies.forEach((proxy, region) => {
      const down = this.regionsDown.get(region);
      proxy.setMode(this.network.kind === 'blackhole' || down === undefined ? this.network : down);
    });
  }

  async closeProxies(): Promise<void> {
    await Promise.all([...this.apiProxies.map((p) => p.close()), this.dbProxy?.close()]);
  }
}

/** A Region's name in logs, events and the history (`via`): region-1 is API instance api-1's Region. */
export function regionName(index: number): string {
  return `region-${index + 1}`;
}

/** Worker `worker`'s Regions, its preferred one first: the preferred Region goes round the workers. */
export function regionOrderOf(worker: number, regions: number): number[] {
  return Array.from({ length: regions }, (_, k) => (worker + k) % regions);
}

/**
 * `n` free ports for processes that are killed and restarted on the same port, chosen BELOW the
 * kernel's ephemeral range. While such a port has no listener, clients keep reconnecting to it;
 * were it an ephemeral port, one of those connects would sooner or later get it as its own source
 * port and connect to itself (TCP simultaneous open), squatting the port so the restart cannot
 * bind it — and the squatter "answers" requests with their own bytes.
 */
export async function reservePorts(n: number): Promise<number[]> {
  let low = 32_768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: stay below the IANA ephemeral range's usual start
  }
  const from = Math.max(1_024, low - 12_000);
  const ports = new Set<number>();
  for (let attempt = 0; ports.size < n && attempt < 1_000; attempt += 1) {
    const port = from + Math.floor(Math.random() * (low - from));
    if (!ports.has(port) && (await canListen(port))) ports.add(port);
  }
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
