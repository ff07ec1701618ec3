import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  EndpointConfigurationError,
  LeaseClient,
  ManualClock,
  createLeader,
  createLeaseGroup,
  createSemaphore,
  createWatch,
  isEndpointConfigurationError,
  sigv4Signer,
  withLease,
  type GroupEvent,
} from 'leasehold';
import { connect } from '../../client/src/cli/options.js';
import { startTestServer, type TestServer } from '../support/local-server.js';

// A client pointed at the wrong place, against the real local server and tiny node:http servers:
// an endpoint with `/v1` in it (the API answers ROUTE_NOT_FOUND for /v1/v1/...), an endpoint that
// redirects (to a second server that records what reaches it), a password in the URL, and a
// list of endpoints where only one is an AWS API. A configuration error ends every campaign at
// once, names the endpoint and the fix, and no secret travels or is echoed.

let server: TestServer;
const closers: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  server = await startTestServer({ semaphores: true });
});

afterAll(async () => {
  await server.close();
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const unique = (label: string) => `config:${label}-${randomUUID().slice(0, 8)}`;

async function listening<T extends Server | HttpServer>(s: T): Promise<string> {
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => s.close(() => resolve())));
  return `http://127.0.0.1:${(s.address() as { port: number }).port}`;
}

interface Received {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A server that records every request (and WebSocket upgrade) it receives, and answers 404 LEASE_NOT_FOUND. */
async function recorder(): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const s = createHttpServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      received.push({ method: request.method, url: request.url, headers: request.headers, body });
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 'LEASE_NOT_FOUND', message: 'Lease "x" does not exist: it was never acquired.' } }));
    });
  });
  s.on('upgrade', (request, socket) => {
    received.push({ method: request.method, url: request.url, headers: request.headers, body: '' });
    socket.destroy();
  });
  return { url: await listening(s), received };
}

/** A server that answers every request, and every WebSocket upgrade, with `status` pointing at `to` (same path). */
async function redirecting(status: number, to: string): Promise<string> {
  const s = createHttpServer((request, response) => {
    request.resume();
    response.writeHead(status, { location: `${to}${request.url ?? '/'}` });
    response.end();
  });
  s.on('upgrade', (request, socket) => {
    socket.end(`HTTP/1.1 ${status} Moved\r\nLocation: ${to.replace(/^http/, 'ws')}${request.url ?? '/'}\r\nContent-Length: 0\r\n\r\n`);
  });
  return listening(s);
}

describe('an endpoint with /v1 in it', { timeout: 20_000 }, () => {
  const wrong = () => `${server.url}/v1`;

  it("ends a Leader's campaign at once with an error naming the endpoint and the fix", async () => {
    const client = new LeaseClient({ endpoint: wrong() });
    const leader = createLeader(client, { name: unique('leader'), holder: 'worker-1', warnings: false });
    closers.push(() => leader.stop());
    const error = await leader.campaign({ timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(isEndpointConfigurationError(error), String(error)).toBe(true);
    const config = error as EndpointConfigurationError;
    expect(config.code).toBe('ROUTE_NOT_FOUND');
    expect(config.endpoint).toBe(wrong());
    expect(config.answerStatus).toBe(404);
    expect(config.message).toContain(`${wrong()} does not serve POST /v1/v1/leases/`);
    expect(config.message).toContain(`without /v1`);
    expect(config.message).toContain(`try ${server.url}.`);
  });

  it('tells the warnings once that it stopped, with the fix, instead of "still trying"', async () => {
    const said: string[] = [];
    const leader = createLeader(new LeaseClient({ endpoint: wrong() }), { name: unique('warn'), holder: 'worker-1', warnings: (m) => void said.push(m) });
    closers.push(() => leader.stop());
    await leader.campaign({ timeoutMs: 10_000 }).catch(() => undefined);
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(`try ${server.url}.`);
    expect(said[0]).toMatch(/Stopped trying to lead config:warn-/);
  });

  it('rejects withLease at once with the same error', async () => {
    const error = await withLease(new LeaseClient({ endpoint: wrong() }), unique('job'), { holder: 'worker-1', warnings: false }, () => 'ran').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndpointConfigurationError);
    expect((error as Error).message).toContain(`try ${server.url}.`);
  });

  it("ends a semaphore's campaign at once", async () => {
    const semaphore = createSemaphore(new LeaseClient({ endpoint: wrong() }), { name: unique('sem'), limit: 2, holder: 'worker-1', warnings: false });
    closers.push(() => semaphore.stop());
    const error = await semaphore.acquire({ timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(isEndpointConfigurationError(error), String(error)).toBe(true);
  });

  it('stops a lease group member after its first join, saying why in an error event, and never tries again', async () => {
    // A manual clock: a retry the member scheduled would be due within a renewal interval; advancing
    // past many of them shows there is none, without waiting for one.
    const clock = new ManualClock(0);
    let acquires = 0;
    const counting = (input: string | URL | Request, init?: RequestInit) => {
      if (String(input).endsWith('/acquire')) acquires += 1;
      return fetch(input, init);
    };
    const events: GroupEvent[] = [];
    const failed = new Promise<void>((resolve) => {
      const group = createLeaseGroup(new LeaseClient({ endpoint: wrong(), fetch: counting as typeof fetch, clock }), {
        group: unique('group'),
        partitions: 4,
        holder: 'worker-1',
        warnings: false,
        clock,
        onEvent: (event) => {
          events.push(event);
          if (event.type === 'error') resolve();
        },
      });
      closers.push(() => group.stop());
      group.start();
    });
    await failed;
    await clock.advance(120_000);
    expect(acquires).toBe(1);
    const errors = events.filter((e) => e.type === 'error');
    expect(errors).toHaveLength(1);
    expect(isEndpointConfigurationError((errors[0] as { error: unknown }).error)).toBe(true);
  });
});

describe('every endpoint failing', () => {
  it('rejects with an error naming each endpoint, not only the last one tried', async () => {
    const refusing = async () => {
      const s = createServer();
      const url = await listening(s);
      await new Promise<void>((resolve) => s.close(() => resolve()));
      return url;
    };
    const [a, b] = [await refusing(), await refusing()];
    const error = (await new LeaseClient({ endpoints: [a, b], retry: { retries: 0 } }).describe('jobs').catch((e: unknown) => e)) as Error;
    expect(error.message).toContain(a);
    expect(error.message).toContain(b);
  });
});

describe('redirects', () => {
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'SESSION-TOKEN-SECRET' };

  for (const status of [307, 308]) {
    it(`never sends a renew's leaseId or the session token on after a ${status}: the redirect is a configuration error naming the endpoint`, async () => {
      const elsewhere = await recorder();
      const endpoint = await redirecting(status, elsewhere.url);
      const client = new LeaseClient({ endpoint, signer: sigv4Signer({ credentials, region: 'us-east-1' }), retry: { retries: 0 } });
      const leaseId = randomUUID().replace(/-/g, '');
      const error = await client.renew('jobs', { leaseId, token: 3 }).catch((e: unknown) => e);
      expect(elsewhere.received).toEqual([]);
      expect(isEndpointConfigurationError(error), String(error)).toBe(true);
      expect((error as Error).message).toContain(`${endpoint} answered ${status}, a redirect to ${elsewhere.url}`);
      expect((error as Error).message).not.toContain(leaseId);
    });
  }

  it("never follows a redirect of the watch's upgrade request", async () => {
    const elsewhere = await recorder();
    const endpoint = await redirecting(307, elsewhere.url);
    const failed = new Promise<unknown>((resolve) => {
      const watch = createWatch({ url: `${endpoint.replace('http', 'ws')}/v1/watch`, reconnect: { baseDelayMs: 60_000, maxDelayMs: 60_000 }, onError: resolve });
      closers.push(() => watch.close());
      watch.subscribe({ names: ['jobs'] }, { event: () => undefined });
    });
    expect(await failed).toBeDefined();
    expect(elsewhere.received).toEqual([]);
  });
});

describe('a password in an endpoint URL', () => {
  it('never appears in an error message', async () => {
    const url = new URL(server.url);
    let message = '';
    try {
      await new LeaseClient({ endpoint: `http://deploy:hunter2@${url.host}` }).describe('jobs');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).not.toBe('');
    expect(message).not.toContain('hunter2');
  });
});

describe("the CLI's connection", () => {
  const keys = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', AWS_SESSION_TOKEN: 'SESSION-TOKEN-SECRET' };
  const saved: Record<string, string | undefined> = {};
  beforeAll(() => {
    for (const [name, value] of Object.entries(keys)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
  });
  afterAll(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('signs only the AWS endpoint of a list: a plain-http endpoint beside it receives no credentials', async () => {
    const local = await recorder();
    const { client } = connect({ endpoint: [local.url, 'https://abc123.execute-api.us-east-1.amazonaws.com/prod'] }, 'describe', {});
    await client.describe('jobs').catch(() => undefined);
    expect(local.received).toHaveLength(1);
    expect(local.received[0]?.headers.authorization).toBeUndefined();
    expect(local.received[0]?.headers['x-amz-security-token']).toBeUndefined();
  });

  it('refuses --sigv4 with a plain-http endpoint on another host, before sending anything', () => {
    expect(() => connect({ endpoint: ['http://leases.internal:8787'], sigv4: true }, 'describe', {})).toThrow(/Refusing to sign requests to http:\/\/leases\.internal:8787/);
  });

  it('signs a loopback endpoint with --sigv4 (the local server in SigV4 mode)', async () => {
    const local = await recorder();
    const { client } = connect({ endpoint: [local.url], sigv4: true, region: 'us-east-1' }, 'describe', {});
    await client.describe('jobs').catch(() => undefined);
    expect(local.received[0]?.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
  });

  it('refuses an endpoint with a password without echoing it', () => {
    expect(() => connect({ endpoint: ['http://deploy:hunter2@127.0.0.1:8787'] }, 'describe', {})).toThrow(/user name or password/);
    expect(() => connect({ endpoint: ['http://deploy:hunter2@127.0.0.1:8787'] }, 'describe', {})).not.toThrow(/hunter2/);
  });
});
