import { once } from 'node:events';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LIMITS, WATCH_LIMITS } from '../../client/src/protocol/index.js';
import { WATCH_PATH } from '../../local/websocket-gateway.js';
import { startTestServer, type TestServer } from '../support/local-server.js';
import { clientFrame, closeOf, httpRequest, rawExchange, rawExchangeAnswer, rawWebSocket } from '../support/raw-http.js';

/**
 * Issue #14, "Done when": hostile WebSocket frames and HTTP requests, generated, against the real
 * local server (watch on, DynamoDB Local behind it). Whatever arrives, no answer is a 5xx, the
 * process survives, and a normal acquire is served afterwards. Bounded: a few seconds of input.
 */
let server: TestServer;
let seq = 0;

beforeAll(async () => {
  server = await startTestServer({ watch: true, semaphores: true });
});
afterAll(async () => {
  await server.close();
});

const watchUrl = () => `${server.url.replace('http', 'ws')}${WATCH_PATH}`;

async function expectAcquireServed(): Promise<void> {
  seq += 1;
  const answer = await httpRequest(server.url, {
    method: 'POST',
    path: `/v1/leases/hostile:after-${seq}/acquire`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ holder: 'worker-a', ttlMs: 15_000 }),
  });
  expect(answer.status).toBe(200);
  expect(server.stats().serverErrors).toBe(0);
}

/** What a hostile client sends on an open watch connection through a WebSocket client. */
type FrameCase =
  | { kind: 'oversized'; extra: number }
  | { kind: 'invalidUtf8'; text: string; at: number }
  | { kind: 'binary'; bytes: Uint8Array }
  | { kind: 'text'; text: string }
  | { kind: 'fragments'; parts: string[]; finished: boolean };

const jsonish = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 3 }),
  fc.record({ action: fc.oneof(fc.constant('subscribe'), fc.string()), names: fc.anything(), prefixes: fc.anything(), rwlocks: fc.anything(), renewed: fc.anything() }, { requiredKeys: [] }).map((o) =>
    JSON.stringify(o),
  ),
  fc.constantFrom('{"action":"__proto__"}', '{"action":"$connect"}', '{"action":"$disconnect"}', '{"action":"subscribe","names":["a"],"__proto__":{"x":1}}'),
);

const frameCase: fc.Arbitrary<FrameCase> = fc.oneof(
  fc.record({ kind: fc.constant('oversized' as const), extra: fc.integer({ min: 1, max: 4_096 }) }),
  fc.record({ kind: fc.constant('invalidUtf8' as const), text: fc.string({ maxLength: 50 }), at: fc.nat() }),
  fc.record({ kind: fc.constant('binary' as const), bytes: fc.uint8Array({ maxLength: 512 }) }),
  fc.record({ kind: fc.constant('text' as const), text: jsonish }),
  fc.record({ kind: fc.constant('fragments' as const), parts: fc.array(jsonish, { minLength: 2, maxLength: 4 }), finished: fc.boolean() }),
);

/** Sends the case, then a ping: the pong (or the server's close) says every frame before it was read. */
async function sendFrames(ws: WebSocket, input: FrameCase): Promise<void> {
  switch (input.kind) {
    case 'oversized':
      ws.send('x'.repeat(WATCH_LIMITS.frameMaxBytes + input.extra));
      break;
    case 'invalidUtf8': {
      const text = Buffer.from(input.text);
      const at = text.length === 0 ? 0 : input.at % text.length;
      ws.send(Buffer.concat([text.subarray(0, at), Buffer.from([0xc3, 0x28]), text.subarray(at)]), { binary: false });
      break;
    }
    case 'binary':
      ws.send(input.bytes, { binary: true });
      break;
    case 'text':
      ws.send(input.text);
      break;
    case 'fragments':
      input.parts.forEach((part, i) => ws.send(part, { fin: input.finished && i === input.parts.length - 1 }));
      break;
  }
  const closed = closeOf(ws);
  ws.ping();
  await Promise.race([new Promise((resolve) => ws.once('pong', resolve)), closed]);
}

/** Raw bytes after a valid upgrade: broken frames a WebSocket client library would never send. */
const rawFrames = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 256 }).map((bytes) => Buffer.from(bytes)),
  // Unmasked client frame: a protocol error (1002).
  fc.string({ maxLength: 40 }).map((text) => Buffer.concat([Buffer.from([0x81, Buffer.byteLength(text)]), Buffer.from(text)])),
  // Reserved opcodes and RSV bits.
  fc
    .record({ opcode: fc.constantFrom(0x3, 0x4, 0x7, 0xb, 0xf), rsv: fc.constantFrom(0, 0x40, 0x20, 0x10), text: fc.string({ maxLength: 20 }) })
    .map(({ opcode, rsv, text }) => {
      const frame = clientFrame(opcode, Buffer.from(text));
      frame[0] = (frame[0] as number) | rsv;
      return frame;
    }),
  // A length header announcing far more than the limit, then little data.
  fc.integer({ min: WATCH_LIMITS.frameMaxBytes + 1, max: 2 ** 31 }).map((length) => {
    const header = Buffer.alloc(10);
    header[0] = 0x81;
    header[1] = 0x80 | 127;
    header.writeBigUInt64BE(BigInt(length), 2);
    return Buffer.concat([header, Buffer.alloc(4), Buffer.from('{"a":')]);
  }),
  // A continuation with nothing to continue, and a fragmented control frame.
  fc.string({ maxLength: 20 }).map((text) => clientFrame(0x0, Buffer.from(text))),
  fc.constant(clientFrame(0x9, Buffer.from('ping'), false)),
  // A control frame over 125 bytes.
  fc.constant(clientFrame(0x9, Buffer.alloc(200, 0x61))),
);

describe('hostile WebSocket frames', () => {
  it('frames of every hostile kind close at most their own connection, and the server keeps serving', async () => {
    const bystander = new WebSocket(watchUrl());
    await once(bystander, 'open');
    await fc.assert(
      fc.asyncProperty(frameCase, async (input) => {
        const ws = new WebSocket(watchUrl());
        ws.on('error', () => undefined);
        await once(ws, 'open');
        await sendFrames(ws, input);
        ws.terminate();
      }),
      { numRuns: 60 },
    );
    await fc.assert(
      fc.asyncProperty(rawFrames, async (bytes) => {
        const { socket, status } = await rawWebSocket(server.url, WATCH_PATH);
        expect(status).toBe(101);
        const closed = closeOf(socket);
        socket.end(bytes);
        await closed;
      }),
      { numRuns: 40 },
    );
    expect(bystander.readyState).toBe(WebSocket.OPEN);
    bystander.send(JSON.stringify({ action: 'subscribe', names: ['hostile:bystander'] }));
    const [reply] = (await once(bystander, 'message')) as [Buffer];
    expect(JSON.parse(reply.toString())).toMatchObject({ type: 'subscribed' });
    bystander.close();
    await expectAcquireServed();
  });
});

/** One HTTP request as bytes, from parts a hostile client controls. */
interface RequestCase {
  method: string;
  path: string;
  host: string | null;
  headers: Array<[string, string]>;
  body: string;
  /** Bytes of the body actually sent (less than announced: the client disconnects mid-body). */
  cutAt: number | null;
  pieces: number;
}

const methods = fc.oneof(
  { arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'CONNECT'), weight: 5 },
  // Names HTTP does not know: Node's parser refuses them (400) before any of our code runs.
  { arbitrary: fc.stringMatching(/^[A-Z]{1,10}$/), weight: 1 },
);
const paths = fc.oneof(
  fc.constantFrom(
    '/',
    '/openapi.json',
    '/v1/leases',
    '/v1/leases/a/acquire',
    '/v1/leases/a/renew',
    '/v1/leases/a/release',
    '/v1/leases/a/handoff',
    '/v1/leases/a/revoke',
    '/v1/semaphores/a/acquire',
    '/v1/semaphores/a/renew',
    '/v1/semaphores/a/release',
    '/v1/semaphores/a',
    '/v1/semaphores/%00/acquire',
    '/v1/rwlocks/a/acquire',
    '/v1/rwlocks/a/renew',
    '/v1/rwlocks/a/release',
    '/v1/rwlocks/a/revoke',
    '/v1/rwlocks/a',
    '/v1/rwlocks/%00/acquire',
    '/v1/leases/%00',
    '/v1/leases/%E0%A4%A/acquire',
    '/v1/leases/../../etc/passwd',
    '/@connections/abc',
    '/v1/watch',
    '/v1/leases?limit=-1&__proto__=x',
    '//v1//leases',
    '*',
  ),
  fc.webPath().map((p) => (p === '' ? '/' : p)),
  fc.webUrl({ withQueryParameters: true }).map((u) => new URL(u).pathname + new URL(u).search),
);
const hosts = fc.oneof(
  // Mostly a good host, so that the rest of the request reaches the routes.
  { arbitrary: fc.constantFrom('127.0.0.1', 'localhost:8787'), weight: 6 },
  fc.constant(null),
  fc.domain(),
  fc.constantFrom('localhost.evil.example', '[::1', '127.0.0.1:99999', 'LOCALHOST:0', '0.0.0.0', '[::ffff:127.0.0.1]', '127.1'),
  fc.string({ maxLength: 30 }).map((s) => s.replace(/[\r\n]/g, '')),
);
const headerCases = fc.array(
  fc.oneof(
    fc.constantFrom<[string, string]>(
      ['content-type', 'application/json; charset=utf-16'],
      ['content-type', 'application/json; charset='],
      ['content-type', 'text/plain'],
      ['content-type', 'application/json;;;'],
      ['content-type', 'multipart/form-data; boundary=x'],
      ['origin', 'https://evil.example'],
      ['transfer-encoding', 'chunked'],
      ['content-length', '-1'],
      ['content-length', '99999999999999999999'],
      ['expect', '100-continue'],
      ['upgrade', 'websocket'],
      ['authorization', 'AWS4-HMAC-SHA256 Credential=x'],
    ),
    // A huge header: past Node's 16 KiB header limit, or just under it.
    fc.integer({ min: 8_000, max: 40_000 }).map((n): [string, string] => ['x-padding', 'a'.repeat(n)]),
    fc.tuple(fc.stringMatching(/^[a-z-]{1,20}$/), fc.string({ maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, ''))),
  ),
  { maxLength: 4 },
);
const bodies = fc.oneof(
  fc.constant(''),
  fc.constant(JSON.stringify({ holder: 'worker-a', ttlMs: 15_000 })),
  fc.constant(JSON.stringify({ holder: 'worker-a', ttlMs: 15_000, limit: 2 })),
  fc.constant(JSON.stringify({ permitId: 'a'.repeat(32), token: 9 })),
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 300 }),
  fc.integer({ min: LIMITS.bodyMaxBytes - 10, max: LIMITS.bodyMaxBytes * 3 }).map((n) => `{"holder":"${'h'.repeat(n)}"}`),
);
const requestCase: fc.Arbitrary<RequestCase> = fc.record({
  method: methods,
  path: paths,
  host: hosts,
  headers: headerCases,
  body: bodies,
  cutAt: fc.option(fc.nat(), { nil: null }),
  pieces: fc.integer({ min: 1, max: 4 }),
});

function requestBytes(input: RequestCase): Buffer {
  const body = Buffer.from(input.body);
  const sent = input.cutAt === null || body.length === 0 ? body : body.subarray(0, input.cutAt % body.length);
  const hasLength = input.headers.some(([name]) => name === 'content-length' || name === 'transfer-encoding');
  const lines = [
    `${input.method} ${input.path} HTTP/1.1`,
    ...(input.host === null ? [] : [`host: ${input.host}`]),
    'connection: close',
    ...input.headers.map(([name, value]) => `${name}: ${value}`),
    ...(hasLength || body.length === 0 ? [] : [`content-length: ${body.length}`]),
  ];
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), sent]);
}

/** A plain GET of `path` with `host`: what the property must always include. */
function refusedCase(host: string, path: string): RequestCase {
  return { method: 'GET', path, host, headers: [], body: '', cutAt: null, pieces: 1 };
}

describe('hostile HTTP requests', () => {
  it('requests with bad hosts, huge headers, odd methods and paths, bad content types and cut or slow bodies never get a 5xx', async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requestCase, async (input) => {
        const status = await rawExchange(server.url, requestBytes(input), input.pieces);
        if (status !== undefined) statuses.set(status, (statuses.get(status) ?? 0) + 1);
        expect(status ?? 0, `${input.method} ${input.path} host=${input.host}`).toBeLessThan(500);
      }),
      // A foreign host and an unknown route run on every seed, so the refusals checked below never
      // depend on what a seed happens to draw.
      { numRuns: 150, examples: [[refusedCase('localhost.evil.example', '/v1/leases')], [refusedCase('127.0.0.1', '/v1/no-such-route')]] },
    );
    // The property reaches the refusals it is meant to: foreign hosts and unknown routes.
    expect(statuses.get(403)).toBeGreaterThan(0);
    expect(statuses.get(404)).toBeGreaterThan(0);
    await expectAcquireServed();
  });
});

/** One request as raw bytes with a good host: the path goes on the wire exactly as written. */
function rawRequest(method: string, path: string, body = ''): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: close'];
  if (body !== '') lines.push('content-type: application/json', `content-length: ${Buffer.byteLength(body)}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`, 'latin1');
}

async function expectPathRefused(method: string, path: string, body = ''): Promise<void> {
  const answer = await rawExchangeAnswer(server.url, rawRequest(method, path, body));
  expect(answer.status, `${method} ${path}`).toBe(400);
  expect(JSON.parse(answer.body ?? '{}'), `${method} ${path}`).toMatchObject({ error: { code: 'VALIDATION_ERROR', field: 'path' } });
}

describe('paths not in canonical form', () => {
  const acquireBody = JSON.stringify({ holder: 'intruder', ttlMs: 15_000 });

  it.each([
    ['a ".." segment that would resolve to the lease', 'POST', '/v1/leases/team-b/../hostile:canon/acquire'],
    ['a "." segment after the name', 'POST', '/v1/leases/hostile:canon/./acquire'],
    ['a "." segment as the name', 'POST', '/v1/leases/./acquire'],
    ['a ".." segment as the name', 'POST', '/v1/leases/../acquire'],
    ['a percent-encoded ".." as the name', 'POST', '/v1/leases/%2e%2e/acquire'],
    ['"//" before the path', 'POST', '//v1/leases/hostile:canon/acquire'],
    ['"//" inside the path', 'POST', '/v1/leases//hostile:canon/acquire'],
    ['an empty name', 'POST', '/v1/leases//acquire'],
    ['an encoded ":" in the name', 'POST', '/v1/leases/hostile%3Acanon/acquire'],
    ['an encoded letter in the name', 'POST', '/v1/leases/%68ostile:canon/acquire'],
    ['an encoded slash and ".." in the name', 'POST', '/v1/leases/team-a.x%2F..%2Fhostile:canon/acquire'],
    ['an encoded letter in a fixed segment', 'POST', '/v1/le%61ses/hostile:canon/acquire'],
    ['an encoded describe name', 'GET', '/v1/leases/hostile%3acanon'],
    ['an encoded batch prefix', 'POST', '/v1/prefixes/hostile%3A/renew'],
    ['a ".." batch prefix', 'POST', '/v1/prefixes/../handoff'],
    ['an encoded rwlock batch prefix', 'POST', '/v1/prefixes/hostile%3A/rwlocks/renew'],
    ['an encoded semaphore name', 'POST', '/v1/semaphores/hostile%3Acanon/acquire'],
    ['an encoded rwlock name', 'POST', '/v1/rwlocks/hostile%3Acanon/acquire'],
    ['an encoded group', 'GET', '/v1/groups/hostile%2Ecanon'],
    ['a "." segment in the list path', 'GET', '/v1/./leases'],
  ])('%s answers 400 VALIDATION_ERROR (field path), sent as raw bytes', async (_label, method, path) => {
    await expectPathRefused(method, path, method === 'POST' ? acquireBody : '');
  });

  it('none of the refused spellings acquired the lease they name', async () => {
    const answer = await httpRequest(server.url, {
      method: 'POST',
      path: '/v1/leases/hostile:canon/acquire',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ holder: 'owner', ttlMs: 15_000 }),
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ lease: { holder: 'owner' } });
  });

  /** A route's path with its parameter filled by a canonical name. */
  const canonicalRequest = fc
    .record({
      route: fc.constantFrom(
        { method: 'POST', pattern: '/v1/leases/{}/acquire' },
        { method: 'POST', pattern: '/v1/leases/{}/renew' },
        { method: 'POST', pattern: '/v1/leases/{}/handoff' },
        { method: 'POST', pattern: '/v1/leases/{}/revoke' },
        { method: 'GET', pattern: '/v1/leases/{}' },
        { method: 'POST', pattern: '/v1/prefixes/{}/renew' },
        { method: 'POST', pattern: '/v1/prefixes/{}/handoff' },
        { method: 'POST', pattern: '/v1/prefixes/{}/rwlocks/renew' },
        { method: 'GET', pattern: '/v1/groups/{}' },
        { method: 'POST', pattern: '/v1/semaphores/{}/acquire' },
        { method: 'GET', pattern: '/v1/semaphores/{}' },
        { method: 'POST', pattern: '/v1/rwlocks/{}/acquire' },
        { method: 'GET', pattern: '/v1/rwlocks/{}' },
      ),
      name: fc.stringMatching(/^[a-z0-9][a-z0-9:._-]{0,15}$/),
    })
    .map(({ route: { method, pattern }, name }) => ({ method, path: pattern.replace('{}', name), name }));
  const hex = (char: string, upper: boolean) => `%${char.charCodeAt(0).toString(16).padStart(2, '0')[upper ? 'toUpperCase' : 'toLowerCase']()}`;
  /** One way to spell the same request that is not canonical. */
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant('encode' as const), at: fc.nat(), upper: fc.boolean() }),
    fc.record({ kind: fc.constantFrom('dot' as const, 'dotdot' as const, 'empty' as const), at: fc.nat() }),
  );

  it('any route with a name percent-encoded, or a ".", ".." or empty segment inserted anywhere, is refused 400 VALIDATION_ERROR (fuzz)', async () => {
    await fc.assert(
      fc.asyncProperty(canonicalRequest, mutation, async ({ method, path, name }, change) => {
        let mutated: string;
        if (change.kind === 'encode') {
          const at = change.at % name.length;
          mutated = path.replace(`/${name}`, `/${name.slice(0, at)}${hex(name[at] as string, change.upper)}${name.slice(at + 1)}`);
        } else {
          const segments = path.split('/');
          const at = 1 + (change.at % (segments.length - 1));
          segments.splice(at, 0, change.kind === 'dot' ? '.' : change.kind === 'dotdot' ? '..' : '');
          mutated = segments.join('/');
        }
        await expectPathRefused(method, mutated, method === 'POST' ? acquireBody : '');
      }),
      { numRuns: 80 },
    );
    expect(server.stats().serverErrors).toBe(0);
    await expectAcquireServed();
  });
});

describe('priorities outside the documented range', () => {
  const outOfRange = fc.oneof(
    fc.integer({ min: -(2 ** 53), max: -1 }),
    fc.integer({ min: LIMITS.priorityMax + 1, max: 2 ** 53 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)),
    fc.constantFrom<unknown>('5', '', true, null, [], {}, Number.MAX_VALUE, -0.5, '1e6', LIMITS.priorityMax + 0.5),
  );

  it('an acquire with any of them is 400 VALIDATION_ERROR naming priority, and records nothing (fuzz)', async () => {
    const name = 'hostile:priority';
    await fc.assert(
      fc.asyncProperty(outOfRange, async (priority) => {
        const res = await fetch(`${server.url}/v1/leases/${name}/acquire`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ holder: 'w', ttlMs: 15_000, priority }),
        });
        expect(res.status, `priority ${JSON.stringify(priority)}`).toBe(400);
        expect(((await res.json()) as { error: unknown }).error).toMatchObject({ code: 'VALIDATION_ERROR', field: 'priority' });
      }),
      { numRuns: 60 },
    );
    expect((await fetch(`${server.url}/v1/leases/${name}`)).status).toBe(404);
    expect(server.stats().serverErrors).toBe(0);
  });
});
