import type { EventRecord, FaultKind } from '../history.js';
import { regionName, type ApiNode, type DatabaseNode, type WorkerNode } from './cluster.js';
import { chooseTarget, type FaultChoice, type OutageMode, type PlannedFault } from './nemesis.js';

/**
 * Carries out a planned schedule (nemesis.ts) against the live cluster: injects each fault at its
 * time, records it as an `event` in the history, and heals it when its time is up. Faults overlap
 * freely across targets; one worker never has two faults of the same mechanism at once (signals:
 * stop/kill; network: partition/delay/drop-answers), so every heal undoes exactly its own fault.
 * `healAll` ends every fault early, at the end of the run.
 */

export interface NemesisContext {
  workers: WorkerNode[];
  apis: ApiNode[];
  db: DatabaseNode;
  leases: string[];
  ttlMs: number;
  /** The worker that last said it was elected for a lease and has not said it lost it. */
  leaderOf(lease: string): { index: number; token: number } | undefined;
  event(kind: FaultKind, target: string, detail?: Record<string, unknown>): EventRecord;
  log(line: string): void;
  /** An API instance whose (unsafe) clock offset must be kept. */
  pinnedOffsetInstance?: number;
  /** `--regions`: API instance i is Region i's API, and `region-outage` faults take one down. */
  regions?: boolean;
  /**
   * The operator: revokes `lease` through API instance `api` (journalled as a `revoke` operation)
   * and says what the answer was. Without it, planned revokes are skipped.
   */
  revoke?(api: ApiNode, lease: string, force: boolean, expectedToken: number): Promise<string>;
}

export interface InjectedFault {
  kind: FaultChoice;
  target: string;
  /** For stop-in-flight: the request the worker was frozen in, if one came. */
  inFlight?: string;
  leaderOf?: string;
  /** For revoke: forced or safe. */
  force?: boolean;
  /** For region-outage: how the Region was down. */
  outage?: OutageMode;
}

const LOSE_ANSWERS_RESET_MS = 200;

export class NemesisRunner {
  readonly injected: InjectedFault[] = [];
  readonly skipped: Array<{ kind: FaultChoice; reason: string }> = [];
  private readonly busySignal = new Set<number>();
  private readonly busyNet = new Set<number>();
  private readonly busyApi = new Set<number>();
  private dbBusy = false;
  /** The Region that is down now (`region-outage`), if any. */
  private regionDown: number | undefined;
  private readonly running = new Set<Promise<void>>();
  private readonly ending = new AbortController();
  private readonly armed = new Map<number, (data: Buffer, via: 'api' | 'db') => void>();

  constructor(private readonly ctx: NemesisContext) {}

  /** Feed from the workers' proxies: every chunk a worker sends. */
  onRequestBytes(worker: WorkerNode, data: Buffer, via: 'api' | 'db'): void {
    this.armed.get(worker.index)?.(data, via);
  }

  /** Injects the plan's faults at their times (offsets from `phaseStartMs`, performance.now()); returns when the last has started. */
  async run(plan: readonly PlannedFault[], phaseStartMs: number): Promise<void> {
    for (const fault of plan) {
      const waitMs = phaseStartMs + fault.atMs - performance.now();
      if (!(await this.hold(waitMs))) return;
      const work = this.inject(fault).catch((error: unknown) => this.ctx.log(`nemesis: ${fault.kind} failed: ${(error as Error).message}`));
      this.running.add(work);
      void work.finally(() => this.running.delete(work));
    }
  }

  /** Ends every fault now (SIGCONT, network back to pass, dead processes restarted) and waits for it. */
  async healAll(): Promise<void> {
    this.ending.abort();
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  /** Sleeps `ms`; false if the run is ending (then at once). */
  private hold(ms: number): Promise<boolean> {
    const signal = this.ending.signal;
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, Math.max(0, ms));
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private async inject(fault: PlannedFault): Promise<void> {
    switch (fault.kind) {
      case 'stop':
      case 'stop-in-flight':
        return this.stop(fault);
      case 'kill':
        return this.kill(fault);
      case 'partition':
      case 'delay':
      case 'drop-answers':
        return this.network(fault);
      case 'restart-api':
        return this.restartApi(fault);
      case 'clock-offset':
        return this.changeClockOffset(fault);
      case 'restart-db':
        return this.restartDb();
      case 'revoke':
        return this.revoke(fault);
      case 'region-outage':
        return this.regionOutage(fault);
    }
  }

  /** Where a signal or network fault goes now (`chooseTarget`), among the workers free for it. */
  private pickWorker(fault: PlannedFault, mechanism: 'signal' | 'net'): { worker: WorkerNode; leaderOf?: string } | undefined {
    const free = (i: number) => {
      const w = this.ctx.workers[i];
      if (!w?.alive || this.busySignal.has(i)) return false;
      return mechanism === 'signal' || !this.busyNet.has(i);
    };
    const chosen = chooseTarget(fault, this.ctx.leases, (lease) => this.ctx.leaderOf(lease)?.index, free);
    return chosen && { worker: this.ctx.workers[chosen.worker]!, ...(chosen.leaderOf !== undefined ? { leaderOf: chosen.leaderOf } : {}) };
  }

  private skip(kind: FaultChoice, reason: string): void {
    this.skipped.push({ kind, reason });
    this.ctx.log(`skip ${kind}: ${reason}`);
  }

  private describeTarget(worker: WorkerNode, leaderOf: string | undefined): string {
    return leaderOf ? `${worker.name} (leader of ${leaderOf})` : worker.name;
  }

  private async stop(fault: PlannedFault): Promise<void> {
    const picked = this.pickWorker(fault, 'signal');
    if (!picked) return this.skip(fault.kind, 'every worker is busy with another fault');
    const { worker, leaderOf } = picked;
    const name = worker.name;
    this.busySignal.add(worker.index);
    try {
      let inFlight: string | undefined;
      if (fault.kind === 'stop-in-flight') {
        // Freeze it the moment its next request leaves it (the proxy still forwards the bytes).
        inFlight = await new Promise<string | undefined>((resolve) => {
          const timer = setTimeout(() => finish(undefined), 2 * this.ctx.ttlMs);
          const finish = (request: string | undefined) => {
            clearTimeout(timer);
            this.armed.delete(worker.index);
            this.ending.signal.removeEventListener('abort', onEnd);
            resolve(request);
          };
          const onEnd = () => finish(undefined);
          this.ending.signal.addEventListener('abort', onEnd, { once: true });
          this.armed.set(worker.index, (data, via) => {
            worker.signal('SIGSTOP');
            finish(describeRequest(data, via));
          });
        });
        if (this.ending.signal.aborted && !worker.stopped) return;
      }
      if (!worker.stopped) worker.signal('SIGSTOP');
      this.ctx.event('stop', name, {
        forMs: fault.durationMs,
        inFlight: fault.kind === 'stop-in-flight' ? (inFlight ?? null) : false,
        ...(leaderOf ? { leaderOf } : {}),
      });
      this.injected.push({ kind: fault.kind, target: name, ...(inFlight ? { inFlight } : {}), ...(leaderOf ? { leaderOf } : {}) });
      this.ctx.log(
        `${fault.kind.padEnd(14)} ${this.describeTarget(worker, leaderOf)} for ${seconds(fault.durationMs)}` +
          (fault.kind === 'stop-in-flight' ? (inFlight ? ` — frozen with ${inFlight} in flight` : ' — no request came, frozen idle') : ''),
      );
      await this.hold(fault.durationMs);
      worker.signal('SIGCONT');
      this.ctx.event('cont', name);
    } finally {
      this.busySignal.delete(worker.index);
    }
  }

  private async kill(fault: PlannedFault): Promise<void> {
    const picked = this.pickWorker(fault, 'signal');
    if (!picked) return this.skip(fault.kind, 'every worker is busy with another fault');
    const { worker, leaderOf } = picked;
    this.busySignal.add(worker.index);
    try {
      const name = worker.name;
      this.ctx.event('kill', name, { signal: 'SIGKILL', restartAfterMs: fault.durationMs, ...(leaderOf ? { leaderOf } : {}) });
      await worker.kill();
      this.injected.push({ kind: 'kill', target: name, ...(leaderOf ? { leaderOf } : {}) });
      this.ctx.log(`${'kill'.padEnd(14)} ${this.describeTarget(worker, leaderOf)} (kill -9), restart in ${seconds(fault.durationMs)}`);
      await this.hold(fault.durationMs);
      await retry(() => worker.start(), 3);
      this.ctx.log(`${'restarted'.padEnd(14)} ${name} as ${worker.name}`);
    } finally {
      this.busySignal.delete(worker.index);
    }
  }

  private async network(fault: PlannedFault): Promise<void> {
    const picked = this.pickWorker(fault, 'net');
    if (!picked) return this.skip(fault.kind, 'every worker is busy with another fault');
    const { worker, leaderOf } = picked;
    const name = worker.name;
    this.busyNet.add(worker.index);
    try {
      const kind = fault.kind as 'partition' | 'delay' | 'drop-answers';
      if (kind === 'partition') worker.setNetwork({ kind: 'blackhole' });
      else if (kind === 'delay') worker.setNetwork({ kind: 'delay', ms: fault.delayMs as number });
      else worker.setNetwork({ kind: 'lose-answers', closeClientAfterMs: LOSE_ANSWERS_RESET_MS, closeWith: 'reset' });
      this.ctx.event(kind, name, {
        forMs: fault.durationMs,
        ...(kind === 'delay' ? { delayMs: fault.delayMs } : {}),
        ...(kind === 'drop-answers' ? { resetAfterMs: LOSE_ANSWERS_RESET_MS } : {}),
        ...(leaderOf ? { leaderOf } : {}),
      });
      this.injected.push({ kind, target: name, ...(leaderOf ? { leaderOf } : {}) });
      const what = kind === 'partition' ? 'blackholed' : kind === 'delay' ? `delayed ${fault.delayMs} ms each way` : 'answers dropped';
      this.ctx.log(`${kind.padEnd(14)} ${this.describeTarget(worker, leaderOf)} ${what} for ${seconds(fault.durationMs)}`);
      await this.hold(fault.durationMs);
      worker.setNetwork({ kind: 'pass' });
      this.ctx.event('heal', name, { of: kind });
    } finally {
      this.busyNet.delete(worker.index);
    }
  }

  /** The planned API instance, or the next one that is not restarting already (and not pinned, or in a Region that is down, if asked). */
  private pickApi(planned: number, avoidPinned: boolean, avoidDownRegion = false): ApiNode | undefined {
    const n = this.ctx.apis.length;
    for (let k = 0; k < n; k += 1) {
      const index = (planned + k) % n;
      if (this.busyApi.has(index) || (avoidPinned && index === this.ctx.pinnedOffsetInstance)) continue;
      if (avoidDownRegion && index === this.regionDown) continue;
      return this.ctx.apis[index];
    }
    return undefined;
  }

  private async restartApi(fault: PlannedFault): Promise<void> {
    const api = this.pickApi(fault.instance as number, false);
    if (!api) return this.skip(fault.kind, 'every API instance is restarting already');
    this.busyApi.add(api.index);
    try {
      this.ctx.event('restart-api', api.name, { signal: 'SIGKILL', downMs: fault.durationMs });
      await api.kill('SIGKILL');
      this.injected.push({ kind: 'restart-api', target: api.name });
      this.ctx.log(`${'restart-api'.padEnd(14)} ${api.name} (kill -9), back in ${seconds(fault.durationMs)} + start`);
      await this.hold(fault.durationMs);
      await retry(() => api.start(), 5);
    } finally {
      this.busyApi.delete(api.index);
    }
  }

  private async changeClockOffset(fault: PlannedFault): Promise<void> {
    const api = this.pickApi(fault.instance as number, true);
    if (!api) return this.skip(fault.kind, 'no API instance is free to restart (or only the one with the unsafe offset)');
    this.busyApi.add(api.index);
    try {
      const previousOffsetMs = api.clockOffsetMs;
      await api.kill('SIGTERM');
      api.clockOffsetMs = fault.offsetMs as number;
      await retry(() => api.start(), 5);
      this.ctx.event('clock-offset', api.name, { offsetMs: api.clockOffsetMs, previousOffsetMs });
      this.injected.push({ kind: 'clock-offset', target: api.name });
      this.ctx.log(`${'clock-offset'.padEnd(14)} ${api.name} restarted with clock ${signed(api.clockOffsetMs)} ms (was ${signed(previousOffsetMs)} ms)`);
    } finally {
      this.busyApi.delete(api.index);
    }
  }

  /** The operator revokes the lease of the first planned lease that has a leader now, safe or forced as planned. */
  private async revoke(fault: PlannedFault): Promise<void> {
    const revoke = this.ctx.revoke;
    if (revoke === undefined) return this.skip('revoke', 'the run has no operator');
    const lease = (fault.leases ?? []).map((i) => this.ctx.leases[i]!).find((l) => this.ctx.leaderOf(l) !== undefined);
    const leader = lease === undefined ? undefined : this.ctx.leaderOf(lease);
    if (lease === undefined || leader === undefined) return this.skip('revoke', 'nobody leads a lease');
    // An operator revokes through a Region that answers.
    const api = this.pickApi(fault.instance as number, false, true);
    if (!api) return this.skip('revoke', 'every API instance is restarting');
    const worker = this.ctx.workers[leader.index]!;
    const force = fault.force === true;
    this.ctx.event('revoke', worker.name, { lease, force, token: leader.token, via: api.name });
    this.injected.push({ kind: 'revoke', target: worker.name, leaderOf: lease, force });
    // It names the grant it means, as `leasehold revoke` does: the leader's token when it was chosen.
    const answer = await revoke(api, lease, force, leader.token);
    this.ctx.log(`${'revoke'.padEnd(14)} ${this.describeTarget(worker, lease)}, ${force ? 'forced' : 'safe'}, via ${api.name}: ${answer}`);
  }

  /**
   * One Region's API down for every worker at once (their proxies to it refuse or blackhole), the
   * other Regions and the database untouched; then up again. One Region at a time.
   */
  private async regionOutage(fault: PlannedFault): Promise<void> {
    if (!this.ctx.regions) return this.skip('region-outage', 'the run has no Regions (--regions 3)');
    if (this.regionDown !== undefined) return this.skip('region-outage', `${regionName(this.regionDown)} is down already`);
    const region = fault.region as number;
    const outage = fault.outage as OutageMode;
    const name = regionName(region);
    this.regionDown = region;
    try {
      // A blackholed Region heals as a partition does: it delivers the requests it held, also those
      // whose senders gave up and went to another Region (late copies the server must refuse).
      const mode = outage === 'blackhole' ? { kind: 'blackhole' as const, healing: true } : { kind: outage };
      for (const worker of this.ctx.workers) worker.setRegionDown(region, mode);
      this.ctx.event('region-outage', name, { forMs: fault.durationMs, mode: outage, api: this.ctx.apis[region]?.name ?? null });
      this.injected.push({ kind: 'region-outage', target: name, outage });
      this.ctx.log(`${'region-outage'.padEnd(14)} ${name} (${this.ctx.apis[region]?.name}) down (${outage}) for ${seconds(fault.durationMs)}`);
      await this.hold(fault.durationMs);
    } finally {
      for (const worker of this.ctx.workers) worker.setRegionDown(region, undefined);
      this.regionDown = undefined;
    }
    this.ctx.event('heal', name, { of: 'region-outage' });
    this.ctx.log(`${'region back'.padEnd(14)} ${name}`);
  }

  private async restartDb(): Promise<void> {
    if (this.dbBusy) return this.skip('restart-db', 'DynamoDB Local is already restarting');
    this.dbBusy = true;
    try {
      const started = performance.now();
      this.ctx.event('restart-db', 'db', { signal: 'SIGTERM' });
      this.injected.push({ kind: 'restart-db', target: 'db' });
      this.ctx.log(`${'restart-db'.padEnd(14)} DynamoDB Local (SIGTERM, data on disk), restarting`);
      // DynamoDB Local gives a start 30 s; a machine this loaded may need more than one. A later
      // attempt finds it already down (or never up) and only starts it.
      await retry(() => this.ctx.db.outageAndRestart(), 6);
      this.ctx.log(`${'db back'.padEnd(14)} after ${seconds(performance.now() - started)}`);
    } finally {
      this.dbBusy = false;
    }
  }
}

/** "POST /v1/leases/orders/renew" or "DynamoDB UpdateItem", from the first bytes of a request. */
export function describeRequest(data: Buffer, via: 'api' | 'db'): string {
  const text = data.subarray(0, 2048).toString('latin1');
  if (via === 'db') {
    const target = /x-amz-target:\s*DynamoDB_\d+\.(\w+)/i.exec(text);
    return `DynamoDB ${target?.[1] ?? 'request'}`;
  }
  const line = /^([A-Z]+) (\S+) HTTP/.exec(text);
  return line ? `${line[1]} ${line[2]}` : 'a request';
}

async function retry(fn: () => Promise<void>, attempts: number): Promise<void> {
  for (let i = 1; ; i += 1) {
    try {
      return await fn();
    } catch (error) {
      if (i >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function signed(n: number): string {
  return n >= 0 ? `+${n}` : String(n);
}
