import { earlierKey } from './lease-replay.js';
import type { LeaseState } from './lease-types.js';

/**
 * The lease model's states, as values: the small steps the model's rules (lease-model.ts) build
 * states with, the key that tells two states apart for the search, and a state as a violation
 * report shows it.
 */

/** A closed interval of server time. */
export interface Window {
  lo: number;
  hi: number;
}

export const NO_RESERVATION = { reservedFor: null, resLo: -Infinity, resHi: -Infinity } as const;

export function keep(s: LeaseState | null): LeaseState[] {
  return s ? [s] : [];
}

/** The state if `token` can be its current token (binding an unknown one), else null. */
export function bindToken(s: LeaseState, token: number | null): LeaseState | null {
  if (token === null) return s;
  if (s.token === null) return { ...s, token };
  return s.token === token ? s : null;
}

export function intersect(w: Window, value: number): Window | null {
  return value >= w.lo && value <= w.hi ? { lo: value, hi: value } : null;
}

/** A held lease whose expiresAt a server answer stated exactly. */
export function pinExpiry(s: LeaseState, expiresAt: number): LeaseState | null {
  if (expiresAt < s.expLo || expiresAt > s.expHi) return null;
  if (s.holder === null) return s;
  return { ...s, expLo: expiresAt, expHi: expiresAt, availLo: expiresAt + s.lockDelayMs, availHi: expiresAt + s.lockDelayMs };
}

export function stateKey(s: LeaseState): string {
  // String(), not JSON: JSON writes both infinities as null.
  return [
    s.exists ? 1 : 0,
    s.token,
    JSON.stringify(s.holder),
    JSON.stringify(s.requestId),
    s.ttlMs,
    s.lockDelayMs,
    s.revoked,
    s.expLo,
    s.expHi,
    s.availLo,
    s.availHi,
    s.priority,
    s.metadata,
    JSON.stringify(s.reservedFor),
    s.resLo,
    s.resHi,
    earlierKey(s.earlier),
  ].join('|');
}

/** A readable one-line rendering of a state, for violation reports. */
export function describeLeaseState(s: LeaseState): string {
  if (!s.exists) return 'never granted';
  const token = s.token === null ? 'unknown token' : `token ${s.token}`;
  const range = (lo: number, hi: number) => (lo === hi ? `${fmt(lo)}` : `[${fmt(lo)}, ${fmt(hi)}]`);
  if (s.holder === null) {
    const ended = s.revoked === 'forced' ? 'revoked by force' : s.revoked === 'safe' ? 'revoked, then released' : s.reservedFor !== null ? `handed off to ${s.reservedFor}` : 'released';
    const reserved = s.reservedFor === null ? '' : ` (to ${s.reservedFor} only until ${range(s.resLo, s.resHi)})`;
    return `${ended}, ${token}, available from ${range(s.availLo, s.availHi)}${reserved} (server ms)`;
  }
  return `held by ${s.holder}, ${token}, expires at ${range(s.expLo, s.expHi)}${s.revoked === 'safe' ? ', revoked (no renew; available at its expiry)' : ''} (server ms)`;
}

function fmt(n: number): string {
  return Number.isFinite(n) ? String(Math.round(n * 1000) / 1000) : String(n);
}
