import { describe, expect, it } from 'vitest';
import { presignSigV4, signSigV4 } from '../../client/src/transport/sigv4.js';
import { createSigV4Verifier } from '../../local/sigv4-verifier.js';

// The SDK signs with aws4fetch (client/src/transport/sigv4.ts); @smithy/signature-v4, inside the local
// server's verifier, recomputes every signature from the request as the server receives it.
const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const DATE = new Date('2026-11-24T19:30:41.123Z');
const REGION = 'eu-west-1';
const verify = createSigV4Verifier({ credentials: [CREDENTIALS], region: REGION, nowMs: () => DATE.getTime() });

const CASES: Array<{ title: string; method: string; url: string; headers: Record<string, string>; body: string | undefined; sessionToken?: string }> = [
  { title: 'a POST with a JSON body', method: 'POST', url: 'https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/leases/cron:nightly/acquire', headers: { 'content-type': 'application/json' }, body: '{"holder":"me","ttlMs":15000}' },
  { title: 'a body with non-ASCII text', method: 'POST', url: 'https://h.example.com/v1/leases/a/acquire', headers: { 'content-type': 'application/json' }, body: '{"holder":"ünï ☃ 😀"}' },
  { title: 'a GET with a sorted, encoded query', method: 'GET', url: 'http://127.0.0.1:8787/v1/leases?prefix=cron%3A&limit=10&a=b%20c', headers: { accept: 'application/json' }, body: undefined },
  { title: 'a path with percent-encoded and reserved characters', method: 'GET', url: "https://h.example.com/v1/leases/a%2Fb%20c!'()*~/describe", headers: {}, body: undefined },
  { title: 'a path with dot segments and a trailing slash', method: 'GET', url: 'https://h.example.com/v1/./x/../leases/', headers: {}, body: undefined },
  { title: 'folded header whitespace, unsignable headers and a session token', method: 'POST', url: 'https://h.example.com/v1/leases/a/renew', headers: { 'x-custom': '  a   b\t c ', 'user-agent': 'node', 'proxy-x': '1', 'cache-control': 'no-cache' }, body: '{}', sessionToken: 'session-1' },
  { title: 'a repeated query key', method: 'GET', url: 'https://h.example.com/v1/leases?b=2&a=2&a=1', headers: {}, body: undefined },
];

/** The request as the server sees it: the SDK's headers, what the signer added, and the URL's host. */
function received(method: string, url: URL, headers: Record<string, string>, added: Record<string, string>, body: string | undefined) {
  return { method, path: `${url.pathname}${url.search}`, headers: { ...headers, ...added, host: url.host }, host: url.host, body: body ?? '' };
}

describe('SigV4 in headers (aws4fetch)', () => {
  for (const c of CASES) {
    it(`signs ${c.title} so that @smithy/signature-v4 computes the same signature`, async () => {
      const url = new URL(c.url);
      const credentials = { ...CREDENTIALS, ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}) };
      const added = await signSigV4({ method: c.method, url, headers: c.headers, body: c.body, credentials, region: REGION, service: 'execute-api', date: DATE });
      await expect(verify(received(c.method, url, c.headers, added, c.body))).resolves.toMatchObject({ accessKeyId: CREDENTIALS.accessKeyId });
    });
  }

  it('adds only authorization, x-amz-date and the session token, and leaves hop-by-hop and proxy headers unsigned', async () => {
    const url = new URL('https://h.example.com/v1/leases/a/renew');
    const headers = { 'content-type': 'application/json', 'user-agent': 'node', 'proxy-x': '1', connection: 'keep-alive' };
    const added = await signSigV4({ method: 'POST', url, headers, body: '{}', credentials: { ...CREDENTIALS, sessionToken: 's' }, region: REGION, service: 'execute-api', date: DATE });
    expect(Object.keys(added).sort()).toEqual(['authorization', 'x-amz-date', 'x-amz-security-token']);
    expect(added['x-amz-date']).toBe('20261124T193041Z');
    const signedHeaders = /SignedHeaders=([^,]+)/.exec(added.authorization ?? '')?.[1];
    expect(signedHeaders).toBe('host;x-amz-date;x-amz-security-token');
  });

  it('signs a request that the server then sees changed as a mismatch', async () => {
    const url = new URL('https://h.example.com/v1/leases?prefix=a');
    const added = await signSigV4({ method: 'GET', url, headers: {}, body: undefined, credentials: CREDENTIALS, region: REGION, service: 'execute-api', date: DATE });
    await expect(verify({ ...received('GET', url, {}, added, undefined), path: '/v1/leases?prefix=b' })).rejects.toThrow('The request signature does not match');
  });
});

// Vectors of AWS's SigV4 test suite (aws-sig-v4-test-suite; no npm package ships it, so the three
// used here are copied from it): AKIDEXAMPLE, region us-east-1, service "service", 2015-08-30T12:36:00Z.
describe("SigV4 against AWS's published test suite", () => {
  const SUITE = [
    { name: 'get-vanilla', method: 'GET', url: 'https://example.amazonaws.com/', signature: '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31' },
    { name: 'get-vanilla-query-order-key-case', method: 'GET', url: 'https://example.amazonaws.com/?Param2=value2&Param1=value1', signature: 'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500' },
    { name: 'post-vanilla', method: 'POST', url: 'https://example.amazonaws.com/', signature: '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b' },
  ];
  for (const v of SUITE) {
    it(`reproduces ${v.name}`, async () => {
      const added = await signSigV4({ method: v.method, url: new URL(v.url), headers: {}, body: undefined, credentials: CREDENTIALS, region: 'us-east-1', service: 'service', date: new Date('2015-08-30T12:36:00Z') });
      expect(added).toEqual({
        'x-amz-date': '20150830T123600Z',
        authorization: `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=${v.signature}`,
      });
    });
  }
});

describe('SigV4 in the query string: a presigned URL (aws4fetch)', () => {
  const presign = (url: string, sessionToken?: string, expiresInSeconds = 300) =>
    presignSigV4({ url: new URL(url), credentials: { ...CREDENTIALS, ...(sessionToken ? { sessionToken } : {}) }, region: REGION, service: 'execute-api', date: DATE, expiresInSeconds });
  const upgrade = (url: URL) => ({ method: 'GET', path: `${url.pathname}${url.search}`, headers: { host: url.host }, host: url.host, body: '' });

  it('presigns a watch URL with its own query so that @smithy/signature-v4 computes the same signature', async () => {
    const url = await presign('wss://abc123.execute-api.eu-west-1.amazonaws.com/prod?batched=1');
    expect(url.protocol).toBe('wss:');
    expect(url.searchParams.get('batched')).toBe('1');
    expect(url.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(url.searchParams.get('X-Amz-Credential')).toBe('AKIDEXAMPLE/20261124/eu-west-1/execute-api/aws4_request');
    expect(url.searchParams.get('X-Amz-Date')).toBe('20261124T193041Z');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('300');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    await expect(verify(upgrade(url))).resolves.toMatchObject({ accessKeyId: CREDENTIALS.accessKeyId });
  });

  it('carries the session token of temporary credentials in the signed query', async () => {
    const url = await presign('ws://127.0.0.1:8787/v1/watch', 'session+/token=');
    expect(url.searchParams.get('X-Amz-Security-Token')).toBe('session+/token=');
    await expect(verify(upgrade(url))).resolves.toMatchObject({ accessKeyId: CREDENTIALS.accessKeyId });
  });

  it('refuses a validity outside 1 second to a week', async () => {
    await expect(presign('ws://127.0.0.1:8787/v1/watch', undefined, 0)).rejects.toThrow(RangeError);
    await expect(presign('ws://127.0.0.1:8787/v1/watch', undefined, 604_801)).rejects.toThrow('from 1 to 604800');
  });
});

describe("leasehold/lambda's sigv4Signer", () => {
  const saved = { ...process.env };
  const request = () => ({ method: 'GET', url: new URL('https://abc123.execute-api.eu-west-1.amazonaws.com/v1/leases/a'), headers: {}, body: undefined });

  it("signs with the environment's keys and session token, as Lambda provides them", async () => {
    const { sigv4Signer } = await import('leasehold/lambda');
    process.env.AWS_ACCESS_KEY_ID = 'AKIDLAMBDA';
    process.env.AWS_SECRET_ACCESS_KEY = 'secret';
    process.env.AWS_SESSION_TOKEN = 'lambda-session';
    try {
      const added = await sigv4Signer()(request());
      expect(added.authorization).toContain('Credential=AKIDLAMBDA/');
      expect(added['x-amz-security-token']).toBe('lambda-session');
      const presigned = await sigv4Signer().presign?.({ url: new URL('wss://abc123.execute-api.eu-west-1.amazonaws.com/prod') });
      expect(presigned?.searchParams.get('X-Amz-Credential')).toMatch(/^AKIDLAMBDA\/\d{8}\/eu-west-1\/execute-api\/aws4_request$/);
      expect(presigned?.searchParams.get('X-Amz-Security-Token')).toBe('lambda-session');
    } finally {
      process.env = { ...saved };
    }
  });

  it('explains missing credentials instead of loading the provider chain', async () => {
    const { sigv4Signer } = await import('leasehold/lambda');
    delete process.env.AWS_ACCESS_KEY_ID;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    try {
      await expect(sigv4Signer()(request())).rejects.toThrow('Expected AWS credentials for SigV4 signing: pass `credentials`, or set AWS_ACCESS_KEY_ID');
    } finally {
      process.env = { ...saved };
    }
  });
});
