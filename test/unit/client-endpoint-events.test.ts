import { describe, expect, it } from 'vitest';
import {
  EndpointMetrics,
  ForbiddenError,
  type LeaseApi,
  LeaseClient,
  ManualClock,
  UnavailableError,
  createWatch,
  isEndpointConfigurationError,
  sigv4Signer,
  type EndpointEvent,
  type LeaseClientOptions,
} from 'leasehold';
import { campaignApi } from '../../client/src/cli/campaign.js';
import { EndpointConfigurationError } from '../../client/src/transport/endpoint-errors.js';
import { grant, publicLease } from './client-fakes.js';

// Which endpoint serves a client with several: the events when requests move to another endpoint
// and back, the counters per endpoint, the error when every endpoint failed, and what the client
// refuses at construction (a password in a URL, credentials over plain http). A fake fetch answers
// per origin on a manual clock: no sockets.

const A = 'https://a.example.com/prod';
const B = 'https://b.example.com/prod';
const C = 'https://c.example.com/prod';
const ID = grant().leaseId;
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

/** A fetch where origins listed in `down` refuse connections; every other origin answers with a grant. */
function regions(options: Partial<LeaseClientOptions> = {}) {
  const clock = new ManualClock(0);
  const down = new Set<string>();
  const sent: Array<{ origin: string; headers: Record<string, string> }> = [];
  const fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(String(input));
    sent.push({ origin: url.origin, headers: (init.headers ?? {}) as Record<string, string> });
    if (down.has(url.origin)) {
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    }
    return json(200, { lease: grant() });
  };
  const events: EndpointEvent[] = [];
  const metrics = new EndpointMetrics();
  const client = new LeaseClient({
    endpoints: [A, B, C],
    fetch: fetch as typeof globalThis.fetch,
    clock,
    random: () => 0.5,
    endpointCoolOffMs: 1_000,
    onEndpointEvent: (event) => {
      events.push(event);
      metrics.record(event);
    },
    ...options,
  });
  const renew = () => client.renew('jobs', { leaseId: ID, token: 7 }, { retries: 0 });
  return { clock, down, sent, events, metrics, client, renew };
}

const switches = (events: EndpointEvent[]) => events.filter((e) => e.type === 'switched');

describe('which endpoint serves', () => {
  it('names no serving endpoint before any answer, then the preferred one, with no switch for the first answer', async () => {
    const t = regions();
    expect(t.client.serving).toBeUndefined();
    await t.renew();
    expect(t.client.serving).toBe(A);
    expect(switches(t.events)).toEqual([]);
  });

  it('tells a switch away when the preferred endpoint fails, and a switch back once it answers again', async () => {
    const t = regions();
    await t.renew();
    t.down.add(new URL(A).origin);
    await t.renew();
    expect(t.client.serving).toBe(B);
    expect(t.client.endpoint).toBe(A);
    t.down.delete(new URL(A).origin);
    await t.clock.advance(1_000);
    await t.renew();
    expect(t.client.serving).toBe(A);
    expect(switches(t.events)).toEqual([
      { type: 'switched', from: A, to: B, region: undefined, back: false },
      { type: 'switched', from: B, to: A, region: undefined, back: true },
    ]);
  });

  it('tells no switch while requests keep going to the same fallback', async () => {
    const t = regions();
    t.down.add(new URL(A).origin);
    await t.renew();
    await t.renew();
    await t.renew();
    expect(switches(t.events)).toEqual([]);
    expect(t.client.serving).toBe(B);
  });

  it('counts attempts per endpoint, answered and failed, and which endpoint serves', async () => {
    const t = regions();
    await t.renew();
    t.down.add(new URL(A).origin);
    t.down.add(new URL(B).origin);
    await t.renew();
    expect(t.metrics.value('endpoint_attempts_total', { endpoint: A, outcome: 'answered' })).toBe(1);
    expect(t.metrics.value('endpoint_attempts_total', { endpoint: A, outcome: 'failed' })).toBe(1);
    expect(t.metrics.value('endpoint_attempts_total', { endpoint: B, outcome: 'failed' })).toBe(1);
    expect(t.metrics.value('endpoint_attempts_total', { endpoint: C, outcome: 'answered' })).toBe(1);
    expect(t.metrics.value('endpoint_switches_total', { endpoint: C })).toBe(1);
    expect(t.metrics.value('endpoint_serving', { endpoint: C })).toBe(1);
    expect(t.metrics.value('endpoint_serving', { endpoint: A })).toBe(0);
    expect(t.metrics.render()).toContain(`endpoint_attempts_total{endpoint="${A}",outcome="failed"} 1`);
  });

  it('labels the samples with the Region an entry names', async () => {
    const t = regions({ endpoints: [{ url: A, region: 'eu-west-1' }] });
    await t.renew();
    expect(t.metrics.render()).toContain(`endpoint_serving{endpoint="${A}",region="eu-west-1"} 1`);
  });

  it('keeps serving requests when the hook throws', async () => {
    const t = regions({
      onEndpointEvent: () => {
        throw new Error('broken hook');
      },
    });
    await expect(t.renew()).resolves.toMatchObject({ token: grant().token });
  });
});

describe('every endpoint failing', () => {
  it('rejects with an error that names every endpoint, not only the last one tried', async () => {
    const t = regions();
    for (const url of [A, B, C]) t.down.add(new URL(url).origin);
    const error = (await t.renew().catch((e: unknown) => e)) as UnavailableError;
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error.code).toBe('UNAVAILABLE');
    for (const url of [A, B, C]) expect(error.message).toContain(url);
    expect(error.message).toContain('all 3 endpoints');
  });
});

describe('what a client refuses at construction', () => {
  it('refuses an endpoint with a user name and password, and never echoes the password', () => {
    const make = () => new LeaseClient({ endpoints: [A, 'https://deploy:hunter2@b.example.com/prod'] });
    expect(make).toThrow(TypeError);
    expect(make).toThrow(/endpoints\[1\].*without a user name or password/);
    expect(make).not.toThrow(/hunter2/);
  });

  it('never echoes a password in the message about another mistake in the same URL', () => {
    expect(() => new LeaseClient({ endpoint: 'ftp://deploy:hunter2@b.example.com' })).toThrow(/ftp:\/\/\*\*\*@b\.example\.com/);
    expect(() => new LeaseClient({ endpoint: 'ftp://deploy:hunter2@b.example.com' })).not.toThrow(/hunter2/);
  });

  it('refuses a watch URL with a password', () => {
    expect(() => createWatch({ url: 'wss://u:hunter2@watch.example.com/v1/watch' })).toThrow(/without a user name or password/);
  });

  it('refuses to sign requests to a plain-http host that is not loopback', () => {
    expect(() => new LeaseClient({ endpoint: 'http://leases.internal:8787', signer: sigv4Signer({ credentials, region: 'us-east-1' }) })).toThrow(
      /Refusing to sign requests to http:\/\/leases\.internal:8787.*https/,
    );
    expect(() => createWatch({ url: 'ws://leases.internal:8787/v1/watch', signer: sigv4Signer({ credentials, region: 'us-east-1' }) })).toThrow(/wss/);
  });

  it('signs plain http to loopback, and plain http elsewhere when that endpoint is marked unsigned', () => {
    const signer = sigv4Signer({ credentials, region: 'us-east-1' });
    expect(() => new LeaseClient({ endpoints: ['http://127.0.0.1:8787', 'http://localhost:8788', 'http://[::1]:8789'], signer })).not.toThrow();
    expect(() => new LeaseClient({ endpoints: [A, { url: 'http://leases.internal:8787', signed: false }], signer })).not.toThrow();
  });

  it('sends requests to an endpoint marked unsigned without a signature, and signs the others', async () => {
    const t = regions({ endpoints: [{ url: 'http://leases.internal:8787', signed: false }, A], signer: sigv4Signer({ credentials, region: 'us-east-1' }) });
    t.down.add('http://leases.internal:8787');
    await t.renew();
    expect(t.sent.map((s) => [s.origin, 'authorization' in s.headers])).toEqual([
      ['http://leases.internal:8787', false],
      [new URL(A).origin, true],
    ]);
  });
});

describe('answers that say the endpoint does not serve the API', () => {
  /** A client over A and B where A gives `answer` once; B answers with a grant. */
  async function answeredBy(answer: Response) {
    const sent: string[] = [];
    const fetch = async (input: string | URL | Request): Promise<Response> => {
      const url = new URL(String(input));
      sent.push(url.hostname[0] as string);
      return url.origin === new URL(A).origin ? answer : json(200, { lease: grant() });
    };
    const client = new LeaseClient({ endpoints: [A, B], fetch: fetch as typeof globalThis.fetch, clock: new ManualClock(0), retry: { retries: 0 } });
    const error = await client.renew('jobs', { leaseId: ID, token: 7 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    return { error: error as Error & { answerStatus?: number; endpoint?: string }, sent };
  }

  const html = (status: number) => new Response('<html>hello</html>', { status, headers: { 'content-type': 'text/html' } });

  it.each([
    ['a 2xx that is not JSON', html(200), 200],
    ["API Gateway's 404 for a path it has no route for", json(404, { message: 'Not Found' }), 404],
    ['a web server 400', html(400), 400],
    ['a redirect', new Response(null, { status: 301, headers: { location: 'https://elsewhere.example.com/prod/v1/leases/jobs/renew' } }), 301],
    ["leasehold's own ROUTE_NOT_FOUND", json(404, { error: { code: 'ROUTE_NOT_FOUND', message: 'No route for POST /v1/v1/leases/jobs/renew.' } }), 404],
  ])('takes %s as a configuration error naming the endpoint and the fix, final at that endpoint', async (_what, answer, status) => {
    const { error, sent } = await answeredBy(answer);
    expect(isEndpointConfigurationError(error), String(error)).toBe(true);
    expect(error).toMatchObject({ code: 'ROUTE_NOT_FOUND', endpoint: A, answerStatus: status });
    expect(error.message).toContain(A);
    expect(error.message).toContain("the endpoint is the API's base URL, stage included, without /v1");
    expect(sent).toEqual(['a']);
  });

  it('names the redirect target by its origin only', async () => {
    const { error } = await answeredBy(new Response(null, { status: 307, headers: { location: 'https://u:hunter2@elsewhere.example.com/x?secret=1' } }));
    expect(error.message).toContain('a redirect to https://elsewhere.example.com,');
    expect(error.message).not.toContain('hunter2');
    expect(error.message).not.toContain('secret=1');
  });

  it('suggests the URL without /v1 when the endpoint ends with it', async () => {
    const sent: string[] = [];
    const fetch = async (input: string | URL | Request): Promise<Response> => {
      sent.push(String(input));
      return json(404, { error: { code: 'ROUTE_NOT_FOUND', message: 'No route.' } });
    };
    const client = new LeaseClient({ endpoint: 'http://127.0.0.1:8787/v1', fetch: fetch as typeof globalThis.fetch });
    const error = (await client.describe('jobs').catch((e: unknown) => e)) as Error;
    expect(sent).toEqual(['http://127.0.0.1:8787/v1/v1/leases/jobs']);
    expect(error.message).toMatch(/try http:\/\/127\.0\.0\.1:8787\.$/);
  });

  it("keeps a gateway's 401 and 403 as credential errors, which a campaign retries", async () => {
    const { error } = await answeredBy(json(403, { message: 'Forbidden' }));
    expect(error).toBeInstanceOf(ForbiddenError);
    expect(isEndpointConfigurationError(error)).toBe(false);
  });
});

describe("leasehold run's and the sidecar's campaign", () => {
  it('stops on a wrong endpoint even after the service once answered, and keeps retrying an outage', async () => {
    const wrong = new EndpointConfigurationError('acquire of lease "jobs": http://127.0.0.1:8787 answered 307, a redirect', 'http://127.0.0.1:8787', 307);
    const outage = new UnavailableError('could not reach http://127.0.0.1:8787: ECONNREFUSED.');
    const answers: Array<() => Promise<unknown>> = [
      () => Promise.resolve({ acquired: false, lease: publicLease({ holder: 'other' }), retryAfterMs: 5_000 }),
      () => Promise.reject(outage),
      () => Promise.reject(wrong),
    ];
    const seen: Array<['fatal' | 'error', unknown]> = [];
    const api = campaignApi({ acquire: () => (answers.shift() as () => Promise<unknown>)() } as unknown as LeaseApi, 1_000, {
      onHeld: () => undefined,
      onError: (error) => seen.push(['error', error]),
      onFatal: (error) => seen.push(['fatal', error]),
    });
    const ask = () => api.acquire('jobs', { holder: 'w', ttlMs: 15_000 }).catch(() => undefined);
    await ask();
    await ask();
    await ask();
    expect(seen).toEqual([
      ['error', outage],
      ['fatal', wrong],
    ]);
  });
});
