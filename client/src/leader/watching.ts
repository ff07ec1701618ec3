import type { LeaseEvent } from '../protocol/index.js';
import type { TermContext } from '../term/context.js';
import { watchFromOption, type WatchClient, type WatchOption, type WatchSubscription } from '../watch/watch.js';
import type { RequestSigner } from '../transport/signing.js';

/** Where a Leader's watch events go: the term (revokes, claims) and the follower's waits. */
export interface WatchListener {
  event(event: LeaseEvent): void;
  live(): void;
  down(): void;
}

/**
 * A Leader's watch (the `watch` option): one subscription to its lease while campaigning is wanted,
 * each change of its state reported as a `watch` event. A failure to subscribe only costs the pushes.
 * A socket the Leader opened itself (a URL given) is closed with it; a shared WatchClient is not.
 */
export class LeaderWatch {
  private subscription: WatchSubscription | undefined;

  /** Resolves the `watch` option (validating it); undefined without one. */
  static of(option: WatchOption | undefined, ctx: TermContext, signer: RequestSigner | undefined): LeaderWatch | undefined {
    const resolved = watchFromOption(option, { signer, clock: ctx.clock, random: ctx.random });
    return resolved.watch === undefined ? undefined : new LeaderWatch(ctx, resolved.watch, resolved.owned);
  }

  private constructor(
    private readonly ctx: TermContext,
    private readonly client: WatchClient,
    private readonly owned: boolean,
  ) {}

  /** The subscription is confirmed right now: every change from here on would be pushed. */
  get live(): boolean {
    return this.subscription?.live ?? false;
  }

  /** Subscribes, unless subscribed already. */
  follow(listener: WatchListener): void {
    if (this.subscription !== undefined) return;
    const { name, holder } = this.ctx;
    try {
      this.subscription = this.client.subscribe(
        { names: [name] },
        {
          event: (event) => listener.event(event),
          live: () => {
            this.ctx.emit({ type: 'watch', name, holder, live: true });
            listener.live();
          },
          down: (error) => {
            listener.down();
            this.ctx.emit({ type: 'watch', name, holder, live: false, error });
          },
        },
      );
    } catch (error) {
      this.ctx.emit({ type: 'watch', name, holder, live: false, error });
    }
  }

  unfollow(): void {
    this.subscription?.close();
    this.subscription = undefined;
  }

  /** Closes the socket if this Leader opened it. */
  close(): void {
    if (this.owned) this.client.close();
  }
}
