import type { MonotonicClock } from '../time/clock.js';
import { ErrorCode, isLeaseholdError } from '../protocol/index.js';
import type { LeaderEvent } from './events.js';
import { isEndpointConfigurationError } from '../transport/endpoint-errors.js';

/**
 * Why nothing happens, said out loud. A leader, a semaphore holder, a `withLease` job or a group
 * member that cannot reach its endpoint, whose credentials are refused, whose renewals fail, or whose
 * health check keeps it from campaigning, keeps trying (see docs/sdk.md, "When nothing happens"), and
 * without these notices it would do so in silence: a process with a wrong endpoint printed nothing
 * until it was killed. They are built from the events every term already emits, so all four entry
 * points share this one mechanism.
 *
 * - A failure warns at once (after the client's own retries of that request), then at most once per
 *   `WARN_EVERY_MS` for each kind of failure while it lasts, counting the ones it did not print.
 * - Waiting behind another holder is said once per wait, as soon as the wait has lasted, or will
 *   last, `NOTE_WAIT_AFTER_MS`: a standby in a fleet prints one line, not one per term.
 *
 * Each message is one line starting `leasehold: `, naming the lease and what goes on; it never holds
 * a leaseId, a permitId or a requestId (it is built from codes, names and the server's messages).
 */

/**
 * `true` (the default): notices go to `console.warn` (stderr). `false`: none. A function gets each
 * message instead (a logger's `warn`, say).
 */
export type WarningsOption = boolean | ((message: string) => void);

/** Whose notices these are: what the process is trying to do, in the messages' words. */
export type NoticeRole = 'leader' | 'permit' | 'rwlock' | 'job' | 'member';

/** A failure of one kind warns at most this often (the first at once). */
export const WARN_EVERY_MS = 30_000;
/** A wait behind another holder is noted once it has lasted, or will last, this long. */
export const NOTE_WAIT_AFTER_MS = 10_000;
/** Longest part of an error's message a notice quotes. */
const MESSAGE_MAX_CHARS = 300;

type FailureKind = 'acquire' | 'renew' | 'fence' | 'read' | 'health';

/** The one event a notice may come from besides a term's: a lease group's failed read. */
export interface GroupReadFailure {
  type: 'groupError';
  group: string;
  operation: string;
  error: unknown;
}

/** The default: stderr. One function for every leader (a process may hold thousands). */
function warnToConsole(message: string): void {
  console.warn(message);
}

export function resolveWarnings(option: unknown): ((message: string) => void) | undefined {
  if (option === undefined || option === true) return warnToConsole;
  if (option === false) return undefined;
  if (typeof option === 'function') return option as (message: string) => void;
  throw new TypeError(`Expected \`warnings\` to be true, false or a function (message) => void, got ${String(option)}.`);
}

export class WaitNotices {
  /** Per kind of failure: when it last warned, and how many since went unsaid. Made at the first failure (most leaders never fail). */
  private throttle: Map<FailureKind, { lastWarnedMs: number; unsaid: number }> | undefined;
  /** When the current wait behind a holder began, and whether it was noted. */
  private waitingSinceMs: number | undefined;
  private waitNoted = false;

  constructor(
    private readonly say: (message: string) => void,
    private readonly clock: MonotonicClock,
    private readonly role: NoticeRole,
    /** Where requests go (`LeaseApi.endpoint`), for the messages. */
    private readonly endpoint: string | undefined,
    /** Waits are noted for this lease only (a group's membership, not its partitions). Default: any. */
    private readonly waitsOf?: string,
  ) {}

  /** Made from a `warnings` option; undefined when it is `false`. */
  static from(option: unknown, clock: MonotonicClock, role: NoticeRole, endpoint: unknown, waitsOf?: string): WaitNotices | undefined {
    const say = resolveWarnings(option);
    return say === undefined ? undefined : new WaitNotices(say, clock, role, typeof endpoint === 'string' ? endpoint : undefined, waitsOf);
  }

  observe(event: LeaderEvent | GroupReadFailure): void {
    switch (event.type) {
      case 'error':
        // A wrong endpoint ends the campaign: said in full (the message holds the fix), and not "still trying".
        if (event.operation === 'acquire' && isEndpointConfigurationError(event.error)) this.tell(`leasehold: ${event.error.message} Stopped trying ${this.aim(event.name)}.`);
        else if (event.operation === 'acquire') this.failed('acquire', `${this.failure(event.error)}; still trying ${this.aim(event.name)}`);
        else if (event.operation === 'fence') this.failed('fence', `claiming the fence for ${event.name} failed: ${this.failure(event.error)}; still trying ${this.aim(event.name)}`);
        return;
      case 'healthCheckFailed':
        // While leading, failures end the term (`unhealthy`, a `lost` event); standing by, they stop the campaign.
        if (event.token === undefined) this.failed('health', `the health check failed (${event.failure}); not trying ${this.aim(event.name)} until it passes`);
        return;
      case 'renewFailed':
        this.failed('renew', `renewing ${event.name} failed: ${this.failure(event.error)}; retrying until its local deadline, when its term ends`);
        return;
      case 'groupError':
        if (event.operation === 'describeGroup') this.failed('read', `reading group ${event.group} failed: ${this.failure(event.error)}; still trying`);
        return;
      case 'following':
        if (this.waitsOf === undefined || event.name === this.waitsOf) this.waiting(event.name, event.leader, event.token, event.retryAfterMs);
        return;
      case 'elected':
      case 'lost':
        this.waitingSinceMs = undefined;
        this.waitNoted = false;
        return;
      default:
        return;
    }
  }

  private failed(kind: FailureKind, text: string): void {
    const now = this.clock.nowMs();
    this.throttle ??= new Map();
    const last = this.throttle.get(kind);
    if (last !== undefined && now - last.lastWarnedMs < WARN_EVERY_MS) {
      last.unsaid += 1;
      return;
    }
    const unsaid = last?.unsaid ?? 0;
    this.throttle.set(kind, { lastWarnedMs: now, unsaid: 0 });
    this.tell(`leasehold: ${text}${unsaid > 0 ? ` (${unsaid} more such failure${unsaid === 1 ? '' : 's'} since the last warning)` : ''}`);
  }

  private waiting(name: string, holder: string | null, token: number, retryAfterMs: number): void {
    const now = this.clock.nowMs();
    this.waitingSinceMs ??= now;
    if (this.waitNoted || now - this.waitingSinceMs + retryAfterMs < NOTE_WAIT_AFTER_MS) return;
    this.waitNoted = true;
    const next = `next try in ${(retryAfterMs / 1000).toFixed(1)} s`;
    if (this.role === 'permit') {
      this.tell(`leasehold: every permit of ${name} is taken; waiting for one (${next})`);
    } else {
      const by = holder === null ? 'is reserved for another holder or in its lock-delay' : `is held by ${holder} (token ${token})`;
      this.tell(`leasehold: ${name} ${by}; waiting ${this.aim(name)} (${next})`);
    }
  }

  /** What this process keeps trying to do, in words. */
  private aim(name: string): string {
    switch (this.role) {
      case 'leader':
        return `to lead ${name}`;
      case 'permit':
        return `to hold a permit of ${name}`;
      case 'rwlock':
        return `to hold a grant of rwlock ${name}`;
      default:
        return `to acquire ${name}`;
    }
  }

  private failure(error: unknown): string {
    return describeFailure(error, this.endpoint);
  }

  private tell(message: string): void {
    try {
      this.say(message);
    } catch {
      // A broken logger must not break leadership.
    }
  }
}

/**
 * Where a client's requests go, for messages: its endpoint, or with several (`endpoints`, one per
 * Region) all of them, `A, B or C`, since a request that failed went through each in turn.
 */
export function endpointsLabel(api: { readonly endpoint?: unknown; readonly endpoints?: unknown }): string | undefined {
  const list = Array.isArray(api.endpoints) ? api.endpoints.filter((e): e is string => typeof e === 'string') : [];
  if (list.length > 1) return `${list.slice(0, -1).join(', ')} or ${list.at(-1)}`;
  return typeof api.endpoint === 'string' ? api.endpoint : undefined;
}

/**
 * What went wrong with a request, in a few words, from the error's code and fields (never parsed
 * back out of its message): `could not reach http://127.0.0.1:8788 (ECONNREFUSED)`.
 */
export function describeFailure(error: unknown, endpoint: string | undefined): string {
  const where = endpoint ?? 'the lease service';
  if (!isLeaseholdError(error)) return error instanceof Error ? `${error.name}: ${bounded(error.message)}` : bounded(String(error));
  switch (error.code) {
    case ErrorCode.UNAVAILABLE: {
      const socket = socketCode(error);
      return socket === undefined ? `could not reach ${where}: ${bounded(error.message)}` : `could not reach ${where} (${socket})`;
    }
    case ErrorCode.UNAUTHORIZED:
    case ErrorCode.FORBIDDEN:
      return `${where} refused the credentials (${error.code}: ${bounded(error.message)})`;
    case ErrorCode.THROTTLED:
      return `${where} is throttling (${error.code}: ${bounded(error.message)})`;
    default:
      return `${error.code}: ${bounded(error.message)}`;
  }
}

/** The socket's error code (ECONNREFUSED, ENOTFOUND, …) somewhere down the error's `cause` chain. */
function socketCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (depth > 0 && typeof code === 'string' && /^E[A-Z0-9_]+$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function bounded(text: string): string {
  const line = text.replace(/\s+/g, ' ').replace(/\.$/, '');
  return line.length > MESSAGE_MAX_CHARS ? `${line.slice(0, MESSAGE_MAX_CHARS)}…` : line;
}
