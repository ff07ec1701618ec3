import { describe, expect, it } from 'vitest';
import { ForbiddenError } from '../../client/src/protocol/index.js';
import { EVERY_LEASE, assertWatchable, principalKey, staticWatchGrants } from '../../functions/watch/watch-grants.js';

describe('principalKey: which principal an ARN stands for', () => {
  it("matches an assumed-role session to its role, whose ARN has a path the session's ARN drops", () => {
    expect(principalKey('arn:aws:sts::123456789012:assumed-role/team-a-tasks/i-0abc')).toBe(
      principalKey('arn:aws:iam::123456789012:role/services/batch/team-a-tasks'),
    );
  });

  it('tells apart roles of the same name in two accounts, and a role from a user of the same name', () => {
    const role = principalKey('arn:aws:iam::123456789012:role/worker');
    expect(principalKey('arn:aws:iam::210987654321:role/worker')).not.toBe(role);
    expect(principalKey('arn:aws:iam::123456789012:user/worker')).not.toBe(role);
  });

  it('matches an IAM user with a path to the same user as API Gateway reports it', () => {
    expect(principalKey('arn:aws:iam::123456789012:user/ops/alice')).toBe('aws:123456789012:user/alice');
  });

  it('compares names case-insensitively, as IAM keeps them unique', () => {
    expect(principalKey('arn:aws:sts::123456789012:assumed-role/Team-A/s')).toBe(principalKey('arn:aws:iam::123456789012:role/team-a'));
  });

  it('keeps the partition: a role in aws-cn is not the role of the same name in aws', () => {
    expect(principalKey('arn:aws-cn:iam::123456789012:role/worker')).not.toBe(principalKey('arn:aws:iam::123456789012:role/worker'));
  });

  it.each([
    ['the account root', 'arn:aws:iam::123456789012:root'],
    ['a federated user', 'arn:aws:sts::123456789012:federated-user/bob'],
    ['a wildcard', 'arn:aws:iam::123456789012:role/*'],
    ['not an ARN', 'team-a-tasks'],
  ])('recognises no principal in %s', (_case, arn) => {
    expect(principalKey(arn)).toBeUndefined();
  });
});

describe('staticWatchGrants', () => {
  const grants = staticWatchGrants([
    { principalArn: 'arn:aws:iam::123456789012:role/path/team-a', prefixes: ['team-a.'] },
    { principalArn: 'arn:aws:iam::123456789012:role/team-a', prefixes: ['shared.'] },
    { principalArn: 'arn:aws:iam::123456789012:role/ops', prefixes: ['team-a.', EVERY_LEASE] },
  ]);

  it("merges every grant of one principal into one list of prefixes", async () => {
    await expect(grants.prefixesOf('arn:aws:sts::123456789012:assumed-role/team-a/s1')).resolves.toEqual(['shared.', 'team-a.']);
  });

  it('reduces a principal with an unscoped grant to every lease', async () => {
    await expect(grants.prefixesOf('arn:aws:sts::123456789012:assumed-role/ops/s1')).resolves.toEqual([EVERY_LEASE]);
  });

  it('has no prefixes for a caller without a grant, nor for a caller with no identity', async () => {
    await expect(grants.prefixesOf('arn:aws:sts::123456789012:assumed-role/team-b/s1')).resolves.toBeUndefined();
    await expect(grants.prefixesOf(undefined)).resolves.toBeUndefined();
  });
});

describe('assertWatchable: a subscription must stay inside the caller\'s prefixes', () => {
  it('accepts names and narrower prefixes under an allowed prefix', () => {
    expect(() => assertWatchable(['team-a.'], ['team-a.indexer'], ['team-a.jobs.'])).not.toThrow();
  });

  it('refuses a name outside every allowed prefix with FORBIDDEN naming the entry', () => {
    const error = (() => {
      try {
        assertWatchable(['team-a.'], ['team-a.x', 'team-b.x'], []);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ForbiddenError);
    expect((error as ForbiddenError).code).toBe('FORBIDDEN');
    expect((error as ForbiddenError).message).toContain('names[1] "team-b.x"');
  });

  it('refuses a prefix wider than the allowed one, which would match other teams\' names', () => {
    expect(() => assertWatchable(['team-a.'], [], ['team-'])).toThrow(/prefixes\[0\] "team-"/);
  });

  it('lets an unscoped grant watch anything', () => {
    expect(() => assertWatchable([EVERY_LEASE], ['anything'], ['a'])).not.toThrow();
  });
});
