import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isFencedOut } from '../../client/src/dynamodb/index.js';
import type { Leader } from '../../client/src/leader/leader.js';
import { createRwlockHolder, type RwlockClient } from '../../client/src/rwlock/rwlock.js';
import type { TermInfo } from '../../client/src/term/events.js';
import { harnessNowMs, monotonicToHarnessMs } from '../harness-clock.js';
import type { RwMode } from '../history.js';
import type { Journal } from './journal.js';
import { pause } from './pause.js';
import { networkCode } from './recording-fetch.js';
import { rwWriteCommand } from './rw-resource.js';

/**
 * `--rw`: a worker process's side of the rwlock mode. For every rwlock name it plays rounds: draw a
 * mode (mostly shared, so a writer has readers to wait behind), take a grant in that mode with the
 * SDK's `createRwlockHolder` (a Leader: fail-closed deadline, renewal at ttl/3, a writer that keeps
 * asking at the server's Retry-After), write to the name's resource row (rw-resource.ts) while the
 * grant lasts and the round's hold time runs, then resign and pause a moment. Every write is
 * journalled as an `rw-write` with its token, mode and the local deadline it was sent under; the
 * rwlock requests themselves are journalled by the recorder (recording-fetch.ts).
 */

/** Share of rounds that ask for an exclusive grant: the rest are shared. */
const EXCLUSIVE_SHARE = 0.3;

export interface RwHoldersOptions {
  client: RwlockClient;
  db: DynamoDBDocumentClient;
  journal: Journal;
  /** The process name, which is also the holder id. */
  process: string;
  names: readonly string[];
  ttlMs: number;
  /** false: `--unsafe-no-fence`. */
  fenced: boolean;
  onGranted(name: string, token: number): void;
  onLost(name: string, token: number, reason: string): void;
}

type WriteResult = 'ok' | 'not-holding' | 'fenced-out' | 'failed' | 'unknown';

export class RwHolders {
  private readonly holders = new Map<string, Record<RwMode, Leader>>();
  /** Per name, the holder of the round in progress. */
  private readonly current = new Map<string, Leader>();
  private readonly rounds: Promise<void>[];
  private readonly ending = new AbortController();

  constructor(private readonly options: RwHoldersOptions) {
    for (const name of options.names) {
      const holderOf = (mode: RwMode) =>
        createRwlockHolder(options.client, {
          name,
          mode,
          holder: options.process,
          ttlMs: options.ttlMs,
          requestTimeoutMs: options.ttlMs,
          onLost: (reason, term) => options.onLost(name, term.token, reason),
        });
      this.holders.set(name, { shared: holderOf('shared'), exclusive: holderOf('exclusive') });
    }
    this.rounds = options.names.map((name) =>
      this.play(name).catch((error: unknown) => {
        process.stderr.write(`${options.process}: rwlock rounds of ${name} failed: ${(error as Error).stack ?? String(error)}\n`);
      }),
    );
  }

  /** Whether `name` is one of this worker's rwlocks. */
  has(name: string): boolean {
    return this.holders.has(name);
  }

  /** The fail-closed deadline of this worker's grant of `name`, on the harness clock; null when it holds none. */
  deadlineOf(name: string): number | null {
    const remaining = this.current.get(name)?.remainingMs() ?? 0;
    return remaining > 0 ? monotonicToHarnessMs(performance.now() + remaining) : null;
  }

  /** SIGTERM: every holder releases what it holds and stops; the rounds end. */
  async stop(): Promise<void> {
    this.ending.abort();
    await Promise.all([...this.holders.values()].flatMap((h) => [h.shared.stop(), h.exclusive.stop()]));
    await Promise.all(this.rounds);
  }

  private async play(name: string): Promise<void> {
    const { ttlMs } = this.options;
    const holders = this.holders.get(name)!;
    while (!this.ending.signal.aborted) {
      const mode: RwMode = Math.random() < EXCLUSIVE_SHARE ? 'exclusive' : 'shared';
      const leader = holders[mode];
      this.current.set(name, leader);
      let term: TermInfo;
      try {
        term = await leader.campaign();
      } catch {
        return; // stopped
      }
      this.options.onGranted(name, term.token);
      // Readers hold longer than writers, so a writer usually finds readers to wait behind.
      const holdMs = ttlMs * (mode === 'shared' ? 1 + Math.random() * 1.5 : 0.5 + Math.random());
      await this.work(name, mode, leader, term, holdMs);
      if (this.ending.signal.aborted) return;
      await leader.resign().catch(() => undefined);
      if (!(await pause(ttlMs * Math.random() * 0.3, this.ending.signal))) return;
    }
  }

  /** Writes to the name's row while the grant lasts (and the hold time runs); stops at the first refusal by the fence. */
  private async work(name: string, mode: RwMode, leader: Leader, term: TermInfo, holdMs: number): Promise<void> {
    const until = performance.now() + holdMs;
    while (!term.signal.aborted && !this.ending.signal.aborted && performance.now() < until) {
      const result = await this.write(name, mode, leader, term.token);
      if (result === 'not-holding' || result === 'fenced-out') return;
      if (!(await pause(50 + Math.random() * 100, term.signal))) return;
    }
  }

  /** One fenced write, journalled; sent only while the grant is ours and its local deadline has not passed. */
  private async write(name: string, mode: RwMode, leader: Leader, token: number): Promise<WriteResult> {
    const { journal, process: holder } = this.options;
    const nowMono = performance.now();
    const remaining = leader.remainingMs();
    if (leader.token !== token || remaining <= 0) return 'not-holding';
    const id = journal.invoke({
      type: 'op',
      process: holder,
      lease: name,
      op: 'rw-write',
      invokeMs: monotonicToHarnessMs(nowMono),
      token,
      holder,
      mode,
      localDeadlineMs: monotonicToHarnessMs(nowMono + remaining),
    });
    try {
      const out = await this.options.db.send(new UpdateCommand(rwWriteCommand(name, holder, token, mode, this.options.fenced)));
      const seq = out.Attributes?.writes;
      if (typeof seq !== 'number') {
        journal.complete(id, { completeMs: harnessNowMs(), outcome: 'unknown', error: 'BAD_ANSWER' });
        return 'unknown';
      }
      journal.complete(id, { completeMs: harnessNowMs(), outcome: 'ok', accepted: true, seq });
      return 'ok';
    } catch (error) {
      const completeMs = harnessNowMs();
      if (error instanceof ConditionalCheckFailedException || (error as { name?: string }).name === 'ConditionalCheckFailedException') {
        const fencedOut = isFencedOut(error, token);
        journal.complete(id, { completeMs, outcome: 'fail', accepted: false, error: fencedOut ? 'STALE_TOKEN' : 'CONDITION_FAILED' });
        return fencedOut ? 'fenced-out' : 'failed';
      }
      journal.complete(id, { completeMs, outcome: 'unknown', error: networkCode(error) });
      return 'unknown';
    }
  }
}
