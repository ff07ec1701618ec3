import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { signSigV4 } from '../../client/src/sigv4.js';

// The SDK signs on Web Crypto (client/src/sigv4.ts); @smithy/signature-v4 is the reference it must agree with.
const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const DATE = new Date('2026-11-24T19:30:41.123Z');

async function reference(method: string, url: URL, headers: Record<string, string>, body: string | undefined, sessionToken?: string) {
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of url.searchParams) {
    const prior = query[key];
    query[key] = prior === undefined ? value : [...(Array.isArray(prior) ? prior : [prior]), value];
  }
  const signer = new SignatureV4({ service: 'execute-api', region: 'eu-west-1', sha256: Sha256, credentials: { ...CREDENTIALS, ...(sessionToken ? { sessionToken } : {}) } });
  const signed = await signer.sign(
    new HttpRequest({ method, protocol: url.protocol, hostname: url.hostname, ...(url.port ? { port: Number(url.port) } : {}), path: url.pathname, query, headers: { ...headers, host: url.host }, body }),
    { signingDate: DATE },
  );
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers)) if (name.toLowerCase() !== 'host' && !(name.toLowerCase() in headers)) out[name.toLowerCase()] = value;
  return out;
}

const CASES: Array<{ title: string; method: string; url: string; headers: Record<string, string>; body: string | undefined; sessionToken?: string }> = [
  { title: 'a POST with a JSON body', method: 'POST', url: 'https://abc123.execute-api.eu-west-1.amazonaws.com/prod/v1/leases/cron:nightly/acquire', headers: { 'content-type': 'application/json' }, body: '{"holder":"me","ttlMs":15000}' },
  { title: 'a GET with a sorted, encoded query', method: 'GET', url: 'http://127.0.0.1:8787/v1/leases?prefix=cron%3A&limit=10&a=b%20c', headers: { accept: 'application/json' }, body: undefined },
  { title: 'a path with percent-encoded and reserved characters', method: 'GET', url: "https://h.example.com/v1/leases/a%2Fb%20c!'()*~/describe", headers: {}, body: undefined },
  { title: 'a path with dot segments and a trailing slash', method: 'GET', url: 'https://h.example.com/v1/./x/../leases/', headers: {}, body: undefined },
  { title: 'folded header whitespace, an unsignable header and a session token', method: 'POST', url: 'https://h.example.com/v1/leases/a/renew', headers: { 'x-custom': '  a   b\t c ', 'user-agent': 'node', 'proxy-x': '1' }, body: '{}', sessionToken: 'session-1' },
  { title: 'a repeated query key', method: 'GET', url: 'https://h.example.com/v1/leases?b=2&a=2&a=1', headers: {}, body: undefined },
];

describe('SigV4 on Web Crypto', () => {
  for (const c of CASES) {
    it(`signs ${c.title} exactly as @smithy/signature-v4 does`, async () => {
      const url = new URL(c.url);
      const credentials = { ...CREDENTIALS, ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}) };
      const ours = await signSigV4({ method: c.method, url, headers: c.headers, body: c.body, credentials, region: 'eu-west-1', service: 'execute-api', date: DATE });
      expect(ours).toEqual(await reference(c.method, url, c.headers, c.body, c.sessionToken));
    });
  }
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
