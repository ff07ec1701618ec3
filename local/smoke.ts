import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import {
  LeaseClient,
  createWatch,
  isLeaseholdError,
  sigv4Signer,
  systemClock,
  type Grant,
  type MonotonicClock,
  type RequestSigner,
  type LeaseEvent,
  type WatchClient,
} from 'leasehold';

/**
 * `npm run smoke`: checks a deployed leasehold stack end to end with the caller's own credentials,
 * through the SDK, and prints what it verified and the latencies it saw. The suite here cannot show
 * what only AWS does (IAM matching the route ARNs, the WebSocket identity, the stream's delay, cold
 * starts; docs/deploy.md, "What only AWS can show"); this is how a deployment shows it.
 *
 * Every check runs against a fresh lease name under `--prefix`, so a smoke never touches real leases,
 * and a grant it won is released whatever fails.
 */

export const SMOKE_USAGE = `Usage: npm run smoke -- --endpoint URL [options]

Checks a deployed stack end to end: signed acquire, renew, describe, list and release of a fresh
lease; with --watch-url, that the watch pushes its events; with --second-profile, that a principal
outside its grant is refused. Prints each check and its latency; exits 1 if any check failed.

  --endpoint URL          the HTTP API (stack output ApiUrl)
  --watch-url URL         the watch (stack output WatchUrl): check that acquire and release are pushed
  --prefix P              lease names to use: P followed by random characters (default smoke.)
  --profile P             AWS profile of the main caller (default: the default credential chain);
                          it needs the lease routes for --prefix, list, and the watch
  --second-profile P      a profile (or role profile) whose grant does NOT cover --prefix: its acquire
                          must be refused, and so must its watch subscription
  --second-prefix Q       a prefix the second profile IS granted: its acquire and release there must
                          succeed (shows that the refusal comes from the grant, not from bad credentials)
  --region R              signing region (default: from an execute-api host name, else AWS_REGION)
  --unsigned              send unsigned requests (a local server without SigV4)
  --timeout D             how long to wait for each answer or push, e.g. 10s (default 10s)`;

export interface SmokeOptions {
  endpoint: string;
  watchUrl?: string | undefined;
  prefix: string;
  profile?: string | undefined;
  secondProfile?: string | undefined;
  secondPrefix?: string | undefined;
  region?: string | undefined;
  unsigned: boolean;
  timeoutMs: number;
}

export interface SmokeCheck {
  name: string;
  ok: boolean;
  /** Milliseconds the checked step took, when it has one. */
  ms?: number;
  detail: string;
}

export interface SmokeDeps {
  clock: MonotonicClock;
  /** Each check as it completes. */
  report: (check: SmokeCheck) => void;
}

const HOLDER = `leasehold-smoke-${process.pid}`;
const TTL_MS = 15_000;

/** Runs every check; never throws for a failed check (it is reported), only for unusable options. */
export async function runSmoke(options: SmokeOptions, deps: SmokeDeps): Promise<SmokeCheck[]> {
  const checks: SmokeCheck[] = [];
  const record = (check: SmokeCheck): void => {
    checks.push(check);
    deps.report(check);
  };
  const timed = async <T>(name: string, step: () => Promise<T>, describe: (value: T) => string): Promise<T | undefined> => {
    const startedMs = deps.clock.nowMs();
    try {
      const value = await step();
      record({ name, ok: true, ms: deps.clock.nowMs() - startedMs, detail: describe(value) });
      return value;
    } catch (error) {
      record({ name, ok: false, ms: deps.clock.nowMs() - startedMs, detail: describeError(error) });
      return undefined;
    }
  };

  const signer = signerFor(options, options.profile);
  const client = new LeaseClient({ endpoint: options.endpoint, ...(signer ? { signer } : {}), timeoutMs: options.timeoutMs, retry: { retries: 0 } });
  const name = freshName(options.prefix);
  const pushes = options.watchUrl ? new PushRecorder(deps.clock) : undefined;
  let watch: WatchClient | undefined;
  let grant: Grant | undefined;

  try {
    if (options.watchUrl && pushes) {
      watch = createWatch({ url: options.watchUrl, ...(signer ? { signer } : {}), timeoutMs: options.timeoutMs });
      const live = pushes.live(options.timeoutMs);
      watch.subscribe({ names: [name] }, { event: (event) => pushes.push(event), live: () => pushes.markLive(), down: (error) => pushes.markDown(error) });
      await timed('watch: connect and subscribe', () => live, () => `subscribed to ${name} on ${options.watchUrl}`);
    }

    const acquireSentMs = deps.clock.nowMs();
    grant = await timed(
      'acquire (signed)',
      async () => {
        const result = await client.acquire(name, { holder: HOLDER, ttlMs: TTL_MS });
        if (!result.acquired) throw new Error(`the fresh name ${name} is held by ${result.lease.holder}`);
        return result.lease;
      },
      (lease) => `granted ${name}, token ${lease.token}`,
    );
    if (grant === undefined) return checks;
    const held = grant;
    const token = held.token;

    if (pushes) await checkPush(pushes, 'acquired', token, acquireSentMs, options.timeoutMs, record);

    const renewed = await timed('renew', () => client.renew(name, held), (lease) => `token ${lease.token}, ${lease.remainingMs} ms left`);
    if (renewed && renewed.token !== token) record({ name: 'renew keeps the token', ok: false, detail: `token ${token} became ${renewed.token}` });
    await timed('describe', () => client.describe(name), (lease) => `holder ${lease.holder}, token ${lease.token}`).then((lease) => {
      if (lease && lease.holder !== HOLDER) record({ name: 'describe shows the holder', ok: false, detail: `holder ${lease.holder}, expected ${HOLDER}` });
    });
    await timed('list', () => client.list({ prefix: name, limit: 10 }), (page) => `${page.leases.length} lease(s) under ${name}`).then((page) => {
      if (page && !page.leases.some((lease) => lease.name === name)) record({ name: 'list shows the lease', ok: false, detail: `${name} missing from the page` });
    });

    const releaseSentMs = deps.clock.nowMs();
    const released = await timed('release', () => client.release(name, held), (lease) => `available, holder ${lease.holder}`);
    if (released) grant = undefined;
    if (released && pushes) await checkPush(pushes, 'released', token, releaseSentMs, options.timeoutMs, record);
  } finally {
    if (grant) await client.release(name, grant).catch(() => undefined);
    watch?.close();
  }

  if (options.secondProfile !== undefined) await checkSecondProfile(options, deps, record, timed);
  return checks;
}

/** The second principal: refused outside its grant (HTTP and watch), served inside it. */
async function checkSecondProfile(
  options: SmokeOptions,
  deps: SmokeDeps,
  record: (check: SmokeCheck) => void,
  timed: <T>(name: string, step: () => Promise<T>, describe: (value: T) => string) => Promise<T | undefined>,
): Promise<void> {
  const signer = signerFor(options, options.secondProfile);
  const client = new LeaseClient({ endpoint: options.endpoint, ...(signer ? { signer } : {}), timeoutMs: options.timeoutMs, retry: { retries: 0 } });
  const who = `profile ${options.secondProfile}`;

  if (options.secondPrefix !== undefined) {
    const inside = freshName(options.secondPrefix);
    await timed(`${who}: acquire and release inside its grant`, async () => {
      const result = await client.acquire(inside, { holder: HOLDER, ttlMs: TTL_MS });
      if (!result.acquired) throw new Error(`${inside} is held by ${result.lease.holder}`);
      await client.release(inside, result.lease);
      return inside;
    }, (lease) => `acquired and released ${lease}`);
  }

  const outside = freshName(options.prefix);
  const startedMs = deps.clock.nowMs();
  try {
    const result = await client.acquire(outside, { holder: HOLDER, ttlMs: TTL_MS });
    if (result.acquired) await client.release(outside, result.lease).catch(() => undefined);
    record({ name: `${who}: acquire outside its grant is refused`, ok: false, detail: `it was answered (acquired: ${result.acquired}) for ${outside}: its grant reaches past its prefix` });
  } catch (error) {
    const refused = isLeaseholdError(error) && error.code === 'FORBIDDEN';
    record({ name: `${who}: acquire outside its grant is refused`, ok: refused, ms: deps.clock.nowMs() - startedMs, detail: refused ? `403 FORBIDDEN for ${outside}` : describeError(error) });
  }

  if (options.watchUrl) {
    if (options.secondPrefix !== undefined) {
      record(await watchVerdict(options, options.watchUrl, signer, deps.clock, `${who}: watching inside its grant`, freshName(options.secondPrefix), true));
    }
    record(await watchVerdict(options, options.watchUrl, signer, deps.clock, `${who}: watching outside its grant is refused`, outside, false));
  }
}

/** Subscribes to `name` on a socket of its own: `allowed` expects the subscription live, else a refusal. */
async function watchVerdict(
  options: SmokeOptions,
  url: string,
  signer: RequestSigner | undefined,
  clock: MonotonicClock,
  check: string,
  name: string,
  allowed: boolean,
): Promise<SmokeCheck> {
  // One attempt: a refusal must not turn into a reconnect loop during the check.
  const watch = createWatch({ url, ...(signer ? { signer } : {}), timeoutMs: options.timeoutMs, reconnect: { baseDelayMs: options.timeoutMs, maxDelayMs: options.timeoutMs } });
  const startedMs = clock.nowMs();
  const verdict = await new Promise<SmokeCheck>((resolve) => {
    const cancel = clock.setTimer(options.timeoutMs, () => resolve({ name: check, ok: false, detail: `neither subscribed nor refused within ${options.timeoutMs} ms` }));
    watch.subscribe({ names: [name] }, {
      event: () => undefined,
      live: () => {
        cancel();
        const ms = clock.nowMs() - startedMs;
        resolve(allowed ? { name: check, ok: true, ms, detail: `subscribed to ${name}` } : { name: check, ok: false, ms, detail: `subscribed to ${name}: the watch grant reaches past its prefix` });
      },
      down: (error) => {
        cancel();
        const refused = isRefusal(error);
        resolve({ name: check, ok: refused && !allowed, ms: clock.nowMs() - startedMs, detail: refused ? `refused: ${describeError(error)}` : describeError(error) });
      },
    });
  });
  watch.close();
  return verdict;
}

async function checkPush(
  pushes: PushRecorder,
  type: 'acquired' | 'released',
  token: number,
  sentMs: number,
  timeoutMs: number,
  record: (check: SmokeCheck) => void,
): Promise<void> {
  const name = `watch: ${type} pushed`;
  const event = await pushes.next(type, token, timeoutMs);
  if (event === undefined) record({ name, ok: false, detail: `no ${type} event for token ${token} within ${timeoutMs} ms` });
  else record({ name, ok: true, ms: event.atMs - sentMs, detail: `token ${token}, from the request's send to the push` });
}

/** Pushed events as they arrive, with the monotonic time they arrived. */
class PushRecorder {
  private readonly seen: Array<{ event: LeaseEvent; atMs: number }> = [];
  private waiters: Array<() => void> = [];
  private isLive = false;
  private lastDown: unknown;

  constructor(private readonly clock: MonotonicClock) {}

  push(event: LeaseEvent): void {
    this.seen.push({ event, atMs: this.clock.nowMs() });
    this.wake();
  }

  markLive(): void {
    this.isLive = true;
    this.wake();
  }

  markDown(error: unknown): void {
    this.lastDown = error;
    this.wake();
  }

  /** Resolves when the subscription is live; rejects with the last failure after `timeoutMs`. */
  live(timeoutMs: number): Promise<void> {
    return this.until(() => this.isLive, timeoutMs).then((ok) => {
      if (!ok) throw this.lastDown ?? new Error(`not subscribed within ${timeoutMs} ms`);
    });
  }

  async next(type: LeaseEvent['type'], token: number, timeoutMs: number): Promise<{ event: LeaseEvent; atMs: number } | undefined> {
    const find = () => this.seen.find((seen) => seen.event.type === type && seen.event.token === token);
    return (await this.until(() => find() !== undefined, timeoutMs)) ? find() : undefined;
  }

  private until(done: () => boolean, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (done()) return resolve(true);
      const cancel = this.clock.setTimer(timeoutMs, () => resolve(done()));
      const check = () => {
        if (!done()) return this.waiters.push(check);
        cancel();
        resolve(true);
      };
      this.waiters.push(check);
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}

function signerFor(options: SmokeOptions, profile: string | undefined): RequestSigner | undefined {
  if (options.unsigned) return undefined;
  return sigv4Signer({ ...(options.region ? { region: options.region } : {}), ...(profile !== undefined ? { credentials: defaultProvider({ profile }) } : {}) });
}

function freshName(prefix: string): string {
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

/** A refusal by the service: 403 from IAM or the watch's grant check, or an upgrade answered 401/403. */
function isRefusal(error: unknown): boolean {
  if (isLeaseholdError(error) && (error.code === 'FORBIDDEN' || error.code === 'UNAUTHORIZED')) return true;
  return /\b40[13]\b/.test(describeError(error));
}

function describeError(error: unknown): string {
  if (isLeaseholdError(error)) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/** `10s`, `1500ms`, `2m` → milliseconds. */
function parseDurationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text);
  if (!match) throw new Error(`--timeout "${text}" is not a duration such as 10s, 1500ms or 2m`);
  return Math.round(Number(match[1]) * { ms: 1, s: 1_000, m: 60_000 }[match[2] as 'ms' | 's' | 'm']);
}

export function parseSmokeArgs(args: string[]): SmokeOptions {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      endpoint: { type: 'string' },
      'watch-url': { type: 'string' },
      prefix: { type: 'string', default: 'smoke.' },
      profile: { type: 'string' },
      'second-profile': { type: 'string' },
      'second-prefix': { type: 'string' },
      region: { type: 'string' },
      unsigned: { type: 'boolean', default: false },
      timeout: { type: 'string', default: '10s' },
    },
  });
  if (!values.endpoint) throw new Error('--endpoint is required');
  if (values['second-prefix'] !== undefined && values['second-profile'] === undefined) throw new Error('--second-prefix needs --second-profile');
  return {
    endpoint: values.endpoint,
    watchUrl: values['watch-url'],
    prefix: values.prefix,
    profile: values.profile,
    secondProfile: values['second-profile'],
    secondPrefix: values['second-prefix'],
    region: values.region,
    unsigned: values.unsigned,
    timeoutMs: parseDurationMs(values.timeout),
  };
}

export function formatCheck(check: SmokeCheck): string {
  const ms = check.ms === undefined ? '' : `${check.ms.toFixed(0)} ms`;
  return `${check.ok ? 'ok  ' : 'FAIL'}  ${check.name.padEnd(52)} ${ms.padStart(8)}  ${check.detail}`;
}

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    console.log(SMOKE_USAGE);
    return;
  }
  let options: SmokeOptions;
  try {
    options = parseSmokeArgs(process.argv.slice(2));
  } catch (error) {
    console.error(`smoke: ${error instanceof Error ? error.message : String(error)}\n\n${SMOKE_USAGE}`);
    process.exit(2);
  }
  console.log(`leasehold smoke: ${options.endpoint}${options.watchUrl ? ` and ${options.watchUrl}` : ''}`);
  const checks = await runSmoke(options, { clock: systemClock, report: (check) => console.log(formatCheck(check)) });
  const failed = checks.filter((check) => !check.ok).length;
  console.log(failed === 0 ? `verified: ${checks.length} checks passed` : `${failed} of ${checks.length} checks failed`);
  process.exit(failed === 0 ? 0 : 1);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
