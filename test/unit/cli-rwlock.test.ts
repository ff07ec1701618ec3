import { describe, expect, it } from 'vitest';
import { UsageError } from '../../client/src/cli/exit-codes.js';
import { formatRwlock } from '../../client/src/cli/format.js';
import { busyText, rwlockTarget } from '../../client/src/cli/rwlock-commands.js';
import type { PublicRwlock } from '../../client/src/protocol/index.js';
import { usageError } from '../support/cli-usage.js';

/**
 * The pure parts of the CLI's rwlock commands: which rwlock and mode `run` holds, why a refused
 * grant waits (in the lock's own words), and describe's table. Refusals come before any connection.
 */

const NOW = 1_800_000_000_000;

function lock(overrides: Partial<PublicRwlock>): PublicRwlock {
  return { name: 'reports:db', mode: null, token: 7, holders: [], waitingWriter: null, readerCap: 32, ...overrides };
}

function reader(holder: string, remainingMs: number, token = 7) {
  return { holder, mode: 'shared' as const, token, ttlMs: 15_000, expiresAt: NOW + remainingMs, remainingMs };
}

describe('rwlockTarget', () => {
  it('--shared NAME and --exclusive NAME name the rwlock and its mode; neither means a lease', () => {
    expect(rwlockTarget({ shared: ['reports:db'] }, [])).toEqual({ name: 'reports:db', mode: 'shared' });
    expect(rwlockTarget({ exclusive: ['reports:db'] }, [])).toEqual({ name: 'reports:db', mode: 'exclusive' });
    expect(rwlockTarget({}, ['reports:db'])).toBeUndefined();
  });

  it('both modes are refused, naming both flags with their names', () => {
    expect(() => rwlockTarget({ shared: ['a'], exclusive: ['b'] }, [])).toThrow('--shared a and --exclusive b cannot be combined');
  });

  it('a NAME given twice is refused naming both, whether as a positional or a repeated flag', () => {
    expect(() => rwlockTarget({ shared: ['a'] }, ['b'])).toThrow('the rwlock NAME is given twice, --shared a and b');
    expect(() => rwlockTarget({ exclusive: ['a', 'a'] }, [])).toThrow('given twice, --exclusive a and --exclusive a');
  });

  it('a name the service would refuse is a usage error before anything is sent', () => {
    expect(() => rwlockTarget({ shared: ['no spaces'] }, [])).toThrow(UsageError);
  });
});

describe('leasehold run --shared/--exclusive command line', () => {
  it('a command written without "--" after --shared NAME gets the corrected line, not "NAME given twice"', async () => {
    const error = await usageError(['--shared', 'reports:db', './report.sh']);
    expect(error.message).toContain('Did you mean `leasehold run --shared reports:db -- ./report.sh`?');
  });

  it('--exclusive followed by another flag says it takes the rwlock NAME', async () => {
    const error = await usageError(['--exclusive', '--ttl', '15s', '--', 'true']);
    expect(error.message).toContain("--exclusive takes the rwlock's NAME");
  });
});

describe('busyText', () => {
  it('an exclusive holder is named with the phase token', () => {
    expect(busyText(lock({ mode: 'exclusive', token: 9, holders: [{ ...reader('w', 1_000, 9), mode: 'exclusive' }] }), 'r', 'shared')).toBe('held exclusively by w (token 9)');
  });

  it('the waiting writer hears that it is the one waiting; a reader hears whom the lock is reserved for', () => {
    const state = lock({ mode: 'shared', holders: [reader('a', 1_000), reader('b', 2_000)], waitingWriter: { holder: 'w', since: NOW - 500, waitExpiresAt: NOW + 5_000 } });
    expect(busyText(state, 'w', 'exclusive')).toBe('held shared by 2 holders (token 7); this run is its waiting writer, so no new shared grant is made until it gets in');
    expect(busyText(state, 'c', 'shared')).toBe('reserved for the waiting writer w (2 shared grants to end)');
  });

  it('a full shared phase says so; readers in the way of a writer are counted', () => {
    const full = lock({ mode: 'shared', readerCap: 2, holders: [reader('a', 1_000), reader('b', 1_000)] });
    expect(busyText(full, 'c', 'shared')).toBe('full: 2 shared holders, the most at once (token 7)');
    expect(busyText(lock({ mode: 'shared', holders: [reader('a', 1_000)] }), 'w', 'exclusive')).toBe('held shared by 1 holder (token 7)');
  });
});

describe('formatRwlock', () => {
  it('counts the waiting writer from the server time its grants carry, and lists holders as a table', () => {
    const text = formatRwlock(
      lock({ mode: 'shared', holders: [reader('reader-a', 4_000), reader('reader-b', 12_500)], waitingWriter: { holder: 'w', since: NOW - 1_500, waitExpiresAt: NOW + 3_000 } }),
    );
    expect(text).toBe(
      [
        'name            reports:db',
        'mode            shared',
        'token           7',
        'holders         2 (at most 32 shared, or 1 exclusive)',
        'waiting writer  w (waiting for 1.5 s; lapses in 3 s unless it asks again)',
        '',
        'HOLDER    MODE    TOKEN  EXPIRES IN',
        'reader-a  shared  7      4 s',
        'reader-b  shared  7      12.5 s',
      ].join('\n'),
    );
  });

  it('with no live grant, the waiting writer’s times are shown as UTC and there is no table', () => {
    const text = formatRwlock(lock({ waitingWriter: { holder: 'w', since: NOW, waitExpiresAt: NOW + 3_000 } }));
    expect(text).toContain('mode            (none: available)');
    expect(text).toContain(`waiting writer  w (waiting since ${new Date(NOW).toISOString()}; lapses at ${new Date(NOW + 3_000).toISOString()} unless it asks again)`);
    expect(text).not.toContain('HOLDER');
  });
});
