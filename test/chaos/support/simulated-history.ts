import fc from 'fast-check';
import type { OpRecord } from '../../../chaos/history.js';
import type { FinalJobRow } from '../../../chaos/checker/final-jobs.js';
import { ReferenceLeaseServer } from './reference-lease-server.js';

/**
 * Histories that a CORRECT lease server produces under concurrency, lost answers and clock skew:
 * a script of steps runs one at a time against the reference server (each step's linearization
 * point strictly after the previous one), and each step is then dressed as a client saw it:
 * invoked some time before its linearization point, answered some time after, the server's clock
 * read by a host whose clock is off by up to ±skew, read a little before the write (after the
 * read, for describe), and some answers lost or requests dropped.
 *
 * Each actor also keeps the SDK's fail-closed deadline (send time of its last successful acquire
 * or renew + what the answer says is left of the ttl, with no drift margin at all: the hardest
 * case), records it on renews, releases and writes, and writes to a fenced resource only before
 * it: a write sets a job's fence to the actor's token if the stored fence is not newer.
 *
 * With `simulationConfigWithRevokes`, an operator also revokes the lease now and then, safe or
 * forced; the actors learn of it only when their renew is refused, as the SDK does.
 */

export interface SimulationConfig {
  ttlMs: number;
  lockDelayMs: number;
  clockSkewMs: number;
  steps: SimStep[];
}

export interface SimStep {
  gapMs: number;
  actor: number;
  action: 'acquire' | 'retry-acquire' | 'renew' | 'release' | 'describe' | 'write' | 'revoke';
  /** revoke: forced (the lease free at once) or safe (free at the grant's expiry). */
  force?: boolean;
  /** write: which of three jobs. */
  job: number;
  beforeMs: number;
  afterMs: number;
  /** Fraction of the window between invoke and the linearization point at which the server read its clock. */
  readAt: number;
  /** This host's clock offset, as a fraction of the skew bound (−1 … 1). */
  offset: number;
  /** ok: answered; lost: took effect, answer lost; dropped: never reached the server. */
  answer: 'ok' | 'lost' | 'dropped';
  /** Whether the answer's server times are recorded. */
  reported: boolean;
  /** For a lost answer: whether the client recorded when it gave up. */
  gaveUp: boolean;
}

const ACTIONS: SimStep['action'][] = ['acquire', 'acquire', 'retry-acquire', 'renew', 'renew', 'release', 'describe', 'write'];

const stepArbitrary = (ttlMs: number, actions = ACTIONS): fc.Arbitrary<SimStep> =>
  fc.record({
    gapMs: fc.oneof(fc.integer({ min: 0, max: Math.round(ttlMs / 4) }), fc.integer({ min: 0, max: Math.round(ttlMs * 1.6) })),
    actor: fc.integer({ min: 0, max: 3 }),
    action: fc.constantFrom(...actions),
    job: fc.integer({ min: 0, max: 2 }),
    beforeMs: fc.integer({ min: 0, max: 120 }),
    afterMs: fc.integer({ min: 0, max: 120 }),
    readAt: fc.double({ min: 0, max: 1, noNaN: true }),
    offset: fc.double({ min: -1, max: 1, noNaN: true }),
    answer: fc.constantFrom('ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'lost', 'dropped'),
    reported: fc.boolean(),
    gaveUp: fc.boolean(),
  });

/** A run's settings, and its steps drawn by `steps` for the run's ttl. */
function configWith(steps: (ttlMs: number) => fc.Arbitrary<SimulationConfig['steps'][number]>): fc.Arbitrary<SimulationConfig> {
  return fc
    .record({
      ttlMs: fc.constantFrom(300, 1_000),
      lockDelayMs: fc.constantFrom(0, 0, 150),
      clockSkewMs: fc.constantFrom(0, 5, 40),
    })
    .chain((base) =>
      fc.record({
        ttlMs: fc.constant(base.ttlMs),
        lockDelayMs: fc.constant(base.lockDelayMs),
        clockSkewMs: fc.constant(base.clockSkewMs),
        steps: fc.array(steps(base.ttlMs), { minLength: 1, maxLength: 80, size: 'medium' }),
      }),
    );
}

export const simulationConfig: fc.Arbitrary<SimulationConfig> = configWith((ttlMs) => stepArbitrary(ttlMs));

/** The same, with an operator's revokes (safe or forced) among the steps. */
export const simulationConfigWithRevokes: fc.Arbitrary<SimulationConfig> = configWith((ttlMs) =>
  fc.tuple(stepArbitrary(ttlMs, [...ACTIONS, 'revoke']), fc.boolean()).map(([step, force]) => ({ ...step, force })),
);

export const LEASE_NAME = 'sim';

interface ActorMemory {
  grant: { token: number; leaseId: string } | null;
  /** The fail-closed deadline of its grant (harness time); null when it has none. */
  deadlineMs: number | null;
  /** requestId of an acquire whose answer was lost, for a retry. */
  pendingRequestId: string | null;
  requests: number;
}

/** `server` may be swapped for a deliberately broken one, to show the checker catches its bugs. */
export function simulate(config: SimulationConfig, server = new ReferenceLeaseServer()): OpRecord[] {
  return simulateWithJobs(config, server).records;
}

/** The history, and the fenced resource's final job table (for I5's final checks). */
export function simulateWithJobs(config: SimulationConfig, server = new ReferenceLeaseServer()): { records: OpRecord[]; finalJobs: FinalJobRow[] } {
  const actors: ActorMemory[] = [0, 1, 2, 3].map(() => ({ grant: null, deadlineMs: null, pendingRequestId: null, requests: 0 }));
  const records: OpRecord[] = [];
  const fences = new Map<string, number>();
  let t = 1_700_000_000_000;

  for (const step of config.steps) {
    t += step.gapMs + 1;
    const process = `w${step.actor}`;
    const me = actors[step.actor]!;
    const invokeMs = t - step.beforeMs;
    const completeMs = t + step.afterMs;
    const offset = Math.round(step.offset * config.clockSkewMs);
    // The server read its clock between invoke and the write (after the read, for describe).
    const decidedAt = Math.round(invokeMs + step.readAt * step.beforeMs) + offset;
    const observedAt = Math.round(t + step.readAt * step.afterMs) + offset;
    const applies = step.answer !== 'dropped';
    const answered = step.answer === 'ok';
    const base = { type: 'op' as const, process, lease: LEASE_NAME, invokeMs };
    const unknown = { completeMs: step.gaveUp ? completeMs : null, outcome: 'unknown' as const, error: 'ETIMEDOUT' };

    // The deadline the actor relies on at invoke time (null: it does not believe it leads).
    const deadlineAtInvoke = me.grant !== null && me.deadlineMs !== null && me.deadlineMs > invokeMs ? me.deadlineMs : null;
    /** After a successful acquire or renew: send time + what the answer says is left, as the SDK does. */
    const extendDeadline = (expiresAt: number) => {
      const validFor = Math.min(config.ttlMs, expiresAt - observedAt);
      me.deadlineMs = Math.max(me.deadlineMs ?? -Infinity, invokeMs + validFor);
    };

    let action = step.action;
    if ((action === 'renew' || action === 'release') && me.grant === null) action = 'describe';
    if (action === 'write' && deadlineAtInvoke === null) action = 'describe';
    if (action === 'retry-acquire' && me.pendingRequestId === null) action = 'acquire';

    switch (action) {
      case 'acquire':
      case 'retry-acquire': {
        const requestId = action === 'retry-acquire' ? (me.pendingRequestId as string) : `${process}-request-${String(++me.requests).padStart(6, '0')}`;
        const request = { holder: process, ttlMs: config.ttlMs, requestId, ...(config.lockDelayMs ? { lockDelayMs: config.lockDelayMs } : {}) };
        const fields = { ...base, op: 'acquire' as const, holder: process, requestId, ttlMs: config.ttlMs, ...(config.lockDelayMs ? { lockDelayMs: config.lockDelayMs } : {}) };
        if (!applies) {
          records.push({ ...fields, ...unknown });
          me.pendingRequestId = requestId;
          break;
        }
        const result = server.acquire(LEASE_NAME, request, decidedAt);
        if (!answered) {
          records.push({ ...fields, ...unknown });
          me.pendingRequestId = requestId;
        } else if (result.acquired) {
          if (me.grant?.token !== result.grant.token) me.deadlineMs = null;
          me.grant = { token: result.grant.token, leaseId: result.grant.leaseId };
          me.pendingRequestId = null;
          extendDeadline(result.grant.expiresAt);
          records.push({
            ...fields,
            completeMs,
            outcome: 'ok',
            token: result.grant.token,
            ...(step.reported ? { serverNowMs: result.grant.acquiredAt, serverExpiresAtMs: result.grant.expiresAt } : {}),
          });
        } else if ('replayed' in result) {
          me.pendingRequestId = null;
          records.push({ ...fields, completeMs, outcome: 'fail', error: 'REQUEST_REPLAYED' });
        } else {
          me.pendingRequestId = null;
          records.push({ ...fields, completeMs, outcome: 'fail', error: 'LEASE_HELD', ...(step.reported ? { token: result.lease.token } : {}) });
        }
        break;
      }
      case 'renew': {
        const grant = me.grant!;
        const fields = { ...base, op: 'renew' as const, holder: process, token: grant.token, localDeadlineMs: deadlineAtInvoke };
        const result = applies ? server.renew(LEASE_NAME, grant, decidedAt) : 'LEASE_LOST';
        if (!answered) records.push({ ...fields, ...unknown });
        else if (result === 'LEASE_LOST') {
          me.grant = null;
          me.deadlineMs = null;
          records.push({ ...fields, completeMs, outcome: 'fail', error: 'LEASE_LOST' });
        } else {
          extendDeadline(result.expiresAt);
          records.push({
            ...fields,
            completeMs,
            outcome: 'ok',
            ...(step.reported ? { serverNowMs: result.renewedAt, serverExpiresAtMs: result.expiresAt } : {}),
          });
        }
        break;
      }
      case 'release': {
        const grant = me.grant!;
        const fields = { ...base, op: 'release' as const, holder: process, token: grant.token, localDeadlineMs: deadlineAtInvoke };
        const result = applies ? server.release(LEASE_NAME, grant, decidedAt) : 'LEASE_LOST';
        if (!answered) records.push({ ...fields, ...unknown });
        else if (result === 'LEASE_LOST') records.push({ ...fields, completeMs, outcome: 'fail', error: 'LEASE_LOST' });
        else records.push({ ...fields, completeMs, outcome: 'ok', ...(step.reported ? { serverExpiresAtMs: result.expiresAt } : {}) });
        me.grant = null;
        me.deadlineMs = null;
        break;
      }
      case 'write': {
        // A fenced write to a job, sent before the actor's deadline: taken iff no newer token wrote it.
        const token = me.grant!.token;
        const job = `job-${step.job}`;
        const fields = { ...base, op: 'write' as const, holder: process, token, job, charge: false, localDeadlineMs: deadlineAtInvoke };
        const stored = fences.get(job);
        const accepted = applies ? stored === undefined || stored <= token : false;
        if (applies && accepted) fences.set(job, token);
        if (!answered) records.push({ ...fields, ...unknown });
        else records.push({ ...fields, completeMs, outcome: accepted ? 'ok' : 'fail', accepted, ...(accepted ? {} : { error: 'STALE_TOKEN' }) });
        break;
      }
      case 'revoke': {
        // The operator's, not the actor's: it knows no grant, and the actors learn of it only from their renews.
        const force = step.force === true;
        const fields = { ...base, process: 'operator', op: 'revoke' as const, force };
        const result = applies ? server.revoke(LEASE_NAME, force, decidedAt) : 'LEASE_NOT_FOUND';
        if (!answered) records.push({ ...fields, ...unknown });
        else if (typeof result === 'string') records.push({ ...fields, completeMs, outcome: 'fail', error: result });
        else {
          records.push({
            ...fields,
            completeMs,
            outcome: 'ok',
            token: result.token,
            revokedForce: result.revoked.force,
            revokedAtMs: result.revoked.at,
            ...(step.reported ? { serverExpiresAtMs: result.expiresAt } : {}),
          });
        }
        break;
      }
      case 'describe': {
        const fields = { ...base, op: 'describe' as const };
        const result = applies ? server.describe(LEASE_NAME, observedAt) : 'LEASE_NOT_FOUND';
        if (!answered) records.push({ ...fields, ...unknown });
        else if (result === 'LEASE_NOT_FOUND') records.push({ ...fields, completeMs, outcome: 'fail', error: 'LEASE_NOT_FOUND' });
        else {
          records.push({
            ...fields,
            completeMs,
            outcome: 'ok',
            token: result.token,
            holder: result.holder,
            ...(step.reported
              ? { serverExpiresAtMs: result.expiresAt, ...(result.holder !== null ? { serverNowMs: result.expiresAt - result.remainingMs } : {}) }
              : {}),
          });
        }
        break;
      }
    }
  }
  const finalJobs: FinalJobRow[] = [0, 1, 2].map((k) => ({ job: `job-${k}`, chargedCount: 0, fenceToken: fences.get(`job-${k}`) ?? null, ackedBy: null }));
  return { records, finalJobs };
}
