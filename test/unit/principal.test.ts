import { describe, expect, it } from 'vitest';
import { LOCAL_PRINCIPAL, principalKey, replayKey } from '../../functions/caller-keys.js';
import { callerPrincipal, publicPrincipal } from '../../functions/http/principal.js';

const event = (iam?: { userArn?: string | null; accessKey?: string | null }) => ({ requestContext: iam === undefined ? {} : { authorizer: { iam } } }) as never;

describe('callerPrincipal', () => {
  it.each([
    ['the IAM principal ARN API Gateway puts in the request context', { userArn: 'arn:aws:iam::123:user/ops', accessKey: 'AKIDOPS' }, 'arn:aws:iam::123:user/ops'],
    ['the SigV4 access key the local server puts there', { accessKey: 'AKIDLOCAL' }, 'AKIDLOCAL'],
    ['"local" without either', undefined, LOCAL_PRINCIPAL],
    ['"local" with empty values', { userArn: '', accessKey: null }, LOCAL_PRINCIPAL],
  ])('is %s', (_what, iam, expected) => {
    expect(callerPrincipal(event(iam))).toBe(expected);
  });
});

describe('publicPrincipal', () => {
  it.each([
    ['drops the session name of an assumed role (often an e-mail address under SSO)', 'arn:aws:sts::123:assumed-role/Role/alice@example.com', 'arn:aws:sts::123:assumed-role/Role'],
    ['does so in any partition', 'arn:aws-us-gov:sts::123:assumed-role/Deploy/i-0abc', 'arn:aws-us-gov:sts::123:assumed-role/Deploy'],
    ['keeps an IAM user ARN whole', 'arn:aws:iam::123:user/ops', 'arn:aws:iam::123:user/ops'],
    ['keeps an access key id', 'AKIDLOCAL', 'AKIDLOCAL'],
    ['keeps "local"', 'local', 'local'],
  ])('%s', (_what, principal, expected) => {
    expect(publicPrincipal(principal)).toBe(expected);
  });
});

describe('the stores’ keys', () => {
  it('hash a principal without keeping it, and bind a requestId to its principal and scope', () => {
    expect(principalKey('arn:aws:sts::123:assumed-role/Role/alice@example.com')).toMatch(/^[0-9a-f]{32}$/);
    expect(principalKey('a')).not.toBe(principalKey('b'));
    const id = 'nightly-job-0001';
    expect(replayKey('lease', 'a', id)).not.toBe(replayKey('lease', 'b', id));
    expect(replayKey('lease', 'a', id)).not.toBe(replayKey('permit', 'a', id));
    expect(replayKey('lease', 'a', id)).not.toContain(id);
  });
});
