import { describe, expect, it } from 'vitest';
import { leaseLostReason, type LeaseRecord } from '../../functions/lease-record.js';
import { LeaseLostError, LeaseLostReason, errorFromBody, type PublicLease } from '../../client/src/protocol/index.js';
import { openapi } from '../support/openapi.js';

const LEASE_ID = 'a'.repeat(32);
const OTHER_ID = 'b'.repeat(32);

/** The item after `transitions` grants, the latest with `token` and `leaseId`, held unless told otherwise. */
function item(overrides: Partial<LeaseRecord> = {}): LeaseRecord {
  return {
    pk: 'jobs',
    token: 1_000_005,
    transitions: 5,
    holder: 'worker-a',
    leaseId: LEASE_ID,
    ttlMs: 10_000,
    lockDelayMs: 0,
    holdMs: 10_000,
    expiresAt: 20_000,
    availableAt: 20_000,
    acquiredAt: 10_000,
    renewedAt: 10_000,
    expireItemAt: 999,
    ...overrides,
  };
}

function lease(overrides: Partial<PublicLease> = {}): PublicLease {
  return {
    name: 'jobs',
    holder: 'worker-b',
    token: 9,
    ttlMs: 10_000,
    expiresAt: 20_000,
    remainingMs: 5_000,
    acquiredAt: 10_000,
    renewedAt: 10_000,
    transitions: 2,
    metadata: null,
    priority: 0,
    ...overrides,
  };
}

describe('leaseLostReason decides from the ALL_OLD item alone', () => {
  const rows: Array<[situation: string, record: LeaseRecord | undefined, request: { leaseId: string; token: number }, reason: string]> = [
    ['no item: never acquired', undefined, { leaseId: LEASE_ID, token: 7 }, 'not_found'],
    ['a newer grant holds it', item(), { leaseId: OTHER_ID, token: 1_000_004 }, 'superseded'],
    ['a newer grant was made and released since', item({ holder: undefined, releasedAt: 15_000 }), { leaseId: OTHER_ID, token: 1_000_003 }, 'superseded'],
    ["the request is the item's first grant, four grants ago", item(), { leaseId: OTHER_ID, token: 1_000_001 }, 'superseded'],
    ["the request token is below the item's first grant (item made again)", item(), { leaseId: OTHER_ID, token: 1_000_000 }, 'mismatch'],
    ['the request token is above the current one', item(), { leaseId: LEASE_ID, token: 1_000_006 }, 'mismatch'],
    ['the current token with another leaseId', item(), { leaseId: OTHER_ID, token: 1_000_005 }, 'mismatch'],
    ['the same grant, released', item({ holder: undefined, releasedAt: 15_000 }), { leaseId: LEASE_ID, token: 1_000_005 }, 'released'],
    ['the same grant, handed off', item({ holder: undefined, reservedFor: 'worker-b', reservedUntil: 30_000 }), { leaseId: LEASE_ID, token: 1_000_005 }, 'released'],
    ['the same grant, past its expiry and not taken', item({ expiresAt: 12_000 }), { leaseId: LEASE_ID, token: 1_000_005 }, 'expired'],
    ['the same grant, revoked (safe: still held)', item({ revokedAt: 15_000, revokedBy: 'ops', revokedReason: 'x', revokedForce: false }), { leaseId: LEASE_ID, token: 1_000_005 }, 'revoked'],
    ['the same grant, revoked by force (no holder)', item({ holder: undefined, releasedAt: 15_000, revokedAt: 15_000, revokedBy: 'ops', revokedReason: 'x', revokedForce: true }), { leaseId: LEASE_ID, token: 1_000_005 }, 'revoked'],
    ['a newer grant after a revoke (the record is cleared by the grant)', item({ token: 1_000_006, transitions: 6, leaseId: OTHER_ID }), { leaseId: LEASE_ID, token: 1_000_005 }, 'superseded'],
  ];
  for (const [situation, record, request, reason] of rows) {
    it(`${situation}: ${reason}`, () => {
      expect(leaseLostReason(record, request)).toBe(reason);
    });
  }
});

describe('LeaseLostError', () => {
  it('says "granted again" only when the reason is superseded', () => {
    const messages = Object.values(LeaseLostReason).map((reason) => [reason, new LeaseLostError('jobs', lease(), reason).message] as const);
    for (const [reason, message] of messages) {
      expect(message.includes('granted again'), `${reason}: ${message}`).toBe(reason === 'superseded');
    }
  });

  it('puts the reason in the wire body, and rebuilds it from the body with the message untouched', () => {
    const sent = new LeaseLostError('jobs', lease({ holder: null }), 'released');
    const body = sent.toBody();
    expect(body).toMatchObject({ code: 'LEASE_LOST', reason: 'released', message: 'Lease "jobs" was lost: the grant was released.' });
    const read = errorFromBody(JSON.parse(JSON.stringify(body)) as typeof body, 'jobs') as LeaseLostError;
    expect(read).toBeInstanceOf(LeaseLostError);
    expect(read.serverReason).toBe('released');
    expect(read.message).toBe(sent.message);
  });

  it('accepts a reason it does not know, for errors from a newer server', () => {
    const read = errorFromBody({ code: 'LEASE_LOST', message: 'Lease "jobs" was lost: evicted.', lease: null, reason: 'evicted' }, 'jobs') as LeaseLostError;
    expect(read.serverReason).toBe('evicted');
    expect(new LeaseLostError('jobs', null, 'evicted').message).toBe('Lease "jobs" was lost: the grant is no longer current (reason "evicted").');
  });
});

describe('a revoked grant', () => {
  it('carries the record in the error and its wire body, and rebuilds it from the body', () => {
    const revoked = { at: 15_000, by: 'arn:aws:iam::123:user/ops', reason: 'stuck', force: false };
    const error = new LeaseLostError('jobs', lease(), 'revoked', { revoked });
    expect(error.message).toBe('Lease "jobs" was lost: arn:aws:iam::123:user/ops revoked the grant: stuck.');
    expect(error.toBody()).toMatchObject({ code: 'LEASE_LOST', reason: 'revoked', revoked });
    const read = errorFromBody(error.toBody(), 'jobs') as LeaseLostError;
    expect(read).toBeInstanceOf(LeaseLostError);
    expect(read.revoked).toEqual(revoked);
    expect((errorFromBody({ ...error.toBody(), revoked: { by: 1 } as never }, 'jobs') as LeaseLostError).revoked).toBeUndefined();
  });
});

describe('the OpenAPI document', () => {
  it('lists exactly the reasons the protocol knows, and lets clients accept any other string', () => {
    const schema = (openapi as unknown as { components: { schemas: Record<string, { anyOf: Array<{ enum?: string[]; type: string }> }> } }).components.schemas
      .LeaseLostReason;
    expect(schema?.anyOf[0]?.enum).toEqual(Object.values(LeaseLostReason));
    expect(schema?.anyOf[1]).toMatchObject({ type: 'string' });
  });
});
