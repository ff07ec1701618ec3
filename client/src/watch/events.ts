import { expectPositive } from '../time/timing.js';
import type { LeaseEvent, LeaseholdError } from '../protocol/index.js';
import type { WatchListener } from './types.js';
import { DEFAULT_MAX_BUFFERED } from './options.js';

/** Opens one subscription for `bufferedEvents`; `onEnd` hears the watch end it (with the refusal, if refused). */
export type OpenSubscription = (listener: WatchListener, onEnd: (refusal?: LeaseholdError) => void) => { close(): void };

/**
 * `WatchClient.events()`: one subscription as an async iterator. Events wait in a buffer while the
 * consumer is busy; more than `maxBuffered` ends the iteration with a RangeError rather than
 * growing without bound. Ends when `signal` aborts or the watch ends the subscription; a refusal
 * (FORBIDDEN, VALIDATION_ERROR) is thrown to the consumer.
 */
export async function* bufferedEvents(
  open: OpenSubscription,
  options: { signal?: AbortSignal; maxBuffered?: number },
): AsyncGenerator<LeaseEvent, void, undefined> {
  const maxBuffered = options.maxBuffered ?? DEFAULT_MAX_BUFFERED;
  expectPositive('maxBuffered', maxBuffered);
  const signal = options.signal;
  if (signal?.aborted) return;
  const buffer: LeaseEvent[] = [];
  let ended = false;
  let refusal: LeaseholdError | undefined;
  let overflow = false;
  let notify: (() => void) | undefined;
  const poke = () => {
    notify?.();
    notify = undefined;
  };
  const listener: WatchListener = {
    event: (event) => {
      if (buffer.length >= maxBuffered) {
        overflow = true;
        sub.close();
      } else {
        buffer.push(event);
      }
      poke();
    },
  };
  const sub = open(listener, (error) => {
    ended = true;
    refusal ??= error;
    poke();
  });
  const onAbort = () => {
    ended = true;
    poke();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      const next = buffer.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (overflow) throw new RangeError(`The watch consumer fell more than ${maxBuffered} events behind (\`maxBuffered\`); the iteration ended.`);
      if (refusal !== undefined) throw refusal;
      if (ended || signal?.aborted) return;
      await new Promise<void>((resolve) => (notify = resolve));
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    sub.close();
  }
}
