import { ValidationError } from './errors.js';

/**
 * How a rule check echoes the value it refused: `secret` fields (leaseId, permitId, requestId,
 * token) are never echoed, since error messages reach logs; `unit` names what an integer counts.
 */
export interface Echo {
  secret?: boolean;
  unit?: string;
}

export const SECRET: Echo = { secret: true };
export const MILLISECONDS: Echo = { unit: 'milliseconds' };

/** The error for `value` breaking `rule`: "is required" when it is missing, else the rule and, unless secret, the value. */
export function refuse(value: unknown, field: string, rule: string, echo: Echo = {}): ValidationError {
  if (value === undefined) return new ValidationError(field, 'is required');
  return new ValidationError(field, rule, echo.secret ? {} : { received: value });
}
