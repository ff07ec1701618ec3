import { describe, expect, it } from 'vitest';
import { readStartOptions, validateLocalServerOptions } from '../../local/server-options.js';

describe("choosing how the local watch hears of a release (watch.push, npm start -- --watch-push)", () => {
  it.each([
    [{ push: 'both' }, "Expected `watch.push` to be 'direct' or 'stream', got \"both\"."],
    [{ pushBudgetMs: 0 }, 'Expected `watch.pushBudgetMs` to be an integer of at least 1, got 0.'],
  ])('the local server refuses watch %j with a message naming the option and the value', (watch, message) => {
    expect(() => validateLocalServerOptions({ tableName: 'leases', watch: { subscriptionTableName: 'subs', ...watch } })).toThrow(new TypeError(message));
  });

  it("the local server takes 'direct' and 'stream'", () => {
    for (const push of ['direct', 'stream']) expect(() => validateLocalServerOptions({ tableName: 'leases', watch: { subscriptionTableName: 'subs', push } })).not.toThrow();
  });

  it('npm start reads --watch-push stream, and leaves the default (direct) to the server when it is absent', () => {
    expect(readStartOptions(['--watch-push', 'stream'], {})).toMatchObject({ watchPush: 'stream' });
    expect(readStartOptions([], {})).not.toHaveProperty('watchPush');
  });

  it('npm start refuses --watch-push bogus, naming the values it takes', () => {
    expect(() => readStartOptions(['--watch-push', 'bogus'], {})).toThrow(new TypeError("Expected `--watch-push` to be 'direct' or 'stream', got \"bogus\"."));
  });

  it('npm start names the -- when npm kept `--watch-push stream` for itself (as npm_config_watch_push)', () => {
    expect(() => readStartOptions(['stream'], { npm_lifecycle_event: 'start', npm_config_watch_push: 'true' })).toThrow(
      'npm kept --watch-push stream for itself: options for the server go after `--`, as in npm start -- --watch-push stream',
    );
  });
});
