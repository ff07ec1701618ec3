import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterEach, describe, expect, it } from 'vitest';
import { ForbiddenError, UnauthorizedError, sigv4Signer, type SigV4SignerOptions } from 'leasehold';
import { createSigV4Verifier, type IncomingSignedRequest } from '../../local/sigv4-verifier.js';

const KEY = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const verify = createSigV4Verifier({ credentials: [KEY], region: 'eu-west-1' });

/** Signs a request as the SDK would and returns it as the server sees it. */
async function signed(
  options: SigV4SignerOptions = { credentials: KEY, region: 'eu-west-1' },
  url = 'http://127.0.0.1:8787/v1/leases/cron:nightly/acquire',
  body: string | undefined = '{"holder":"me","ttlMs":15000}',
): Promise<IncomingSignedRequest> {
  const target = new URL(url);
  const headers = { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
  const added = await sigv4Signer(options)({ method: body === undefined ? 'GET' : 'POST', url: target, headers, body });
  return {
    method: body === undefined ? 'GET' : 'POST',
    path: `${target.pathname}${target.search}`,
    headers: { ...headers, ...added, host: target.host, 'user-agent': 'node' },
    host: target.host,
    body: body ?? '',
  };
}

const savedEnv = { ...process.env };
afterEach(() => {
  process.env = { ...savedEnv };
});

describe('sigv4Signer and the local verifier', () => {
  it('signs a request the verifier accepts', async () => {
    await expect(verify(await signed())).resolves.toMatchObject({ accessKeyId: KEY.accessKeyId });
  });

  it('signs query parameters, which the verifier checks', async () => {
    const request = await signed(undefined, 'http://127.0.0.1:8787/v1/leases?prefix=cron%3A&limit=10', undefined);
    await expect(verify(request)).resolves.toMatchObject({ accessKeyId: KEY.accessKeyId });
    await expect(verify({ ...request, path: '/v1/leases?prefix=other&limit=10' })).rejects.toBeInstanceOf(ForbiddenError);
  });

  it('adds Authorization and X-Amz-Date (the body is hashed into the signature), and never a Host header', async () => {
    const target = new URL('http://127.0.0.1:8787/v1/leases/jobs/renew');
    const added = await sigv4Signer({ credentials: KEY, region: 'eu-west-1' })({ method: 'POST', url: target, headers: {}, body: '{}' });
    expect(Object.keys(added).sort()).toEqual(['authorization', 'x-amz-date']);
    expect(added.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=host;/);
  });

  it('sends the session token of temporary credentials', async () => {
    const request = await signed({ credentials: { ...KEY, sessionToken: 'session-1' }, region: 'eu-west-1' });
    expect(request.headers['x-amz-security-token']).toBe('session-1');
    await expect(verify(request)).resolves.toMatchObject({ accessKeyId: KEY.accessKeyId });
  });

  it('takes the region from an execute-api host name', async () => {
    const target = new URL('https://abc123.execute-api.ap-southeast-2.amazonaws.com/prod/v1/leases/jobs');
    const added = await sigv4Signer({ credentials: KEY })({ method: 'GET', url: target, headers: {}, body: undefined });
    expect(added.authorization).toContain('/ap-southeast-2/execute-api/aws4_request');
  });

  it('falls back to AWS_REGION for other host names', async () => {
    process.env.AWS_REGION = 'us-west-2';
    const added = await sigv4Signer({ credentials: KEY })({ method: 'GET', url: new URL('https://leases.example.com/v1/leases/a'), headers: {}, body: undefined });
    expect(added.authorization).toContain('/us-west-2/execute-api/aws4_request');
  });

  it('explains a missing region', async () => {
    delete process.env.AWS_REGION;
    delete process.env.AWS_DEFAULT_REGION;
    const sign = sigv4Signer({ credentials: KEY });
    await expect(sign({ method: 'GET', url: new URL('https://leases.example.com/v1/leases/a'), headers: {}, body: undefined })).rejects.toThrow(
      'Expected `region` for SigV4 signing: "leases.example.com" is not an execute-api host name',
    );
  });

  it('uses the default credential provider chain when given no credentials', async () => {
    process.env.AWS_ACCESS_KEY_ID = KEY.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = KEY.secretAccessKey;
    await expect(verify(await signed({ region: 'eu-west-1' }))).resolves.toMatchObject({ accessKeyId: KEY.accessKeyId });
  });
});

/** A watch upgrade presigned by the SDK's signer, as the server sees it: a GET whose URL carries the signature. */
async function presigned(options: SigV4SignerOptions = { credentials: KEY, region: 'eu-west-1' }, url = 'ws://127.0.0.1:8787/v1/watch?batched=1') {
  const signer = sigv4Signer(options);
  const target = await (signer.presign as NonNullable<typeof signer.presign>)({ url: new URL(url) });
  return { method: 'GET', path: `${target.pathname}${target.search}`, headers: { host: target.host, 'user-agent': 'node' }, host: target.host, body: '' };
}

/** The same request with one query parameter replaced. */
function withParam(request: IncomingSignedRequest, name: string, value: string): IncomingSignedRequest {
  const [path, query] = request.path.split('?') as [string, string];
  const params = new URLSearchParams(query);
  params.set(name, value);
  return { ...request, path: `${path}?${params}` };
}

describe('a presigned URL (SigV4 in the query string, as the watch signs its upgrade)', () => {
  it('is accepted by the local verifier, with the caller it names', async () => {
    await expect(verify(await presigned())).resolves.toMatchObject({ accessKeyId: KEY.accessKeyId, userArn: expect.stringContaining(KEY.accessKeyId) });
  });

  it('is accepted until X-Amz-Date + X-Amz-Expires (300 s) and refused with 401 after', async () => {
    const request = await presigned();
    const date = new URLSearchParams(request.path.split('?')[1]).get('X-Amz-Date') as string;
    const signedAtMs = Date.UTC(+date.slice(0, 4), +date.slice(4, 6) - 1, +date.slice(6, 8), +date.slice(9, 11), +date.slice(11, 13), +date.slice(13, 15));
    const at = (ms: number) => createSigV4Verifier({ credentials: [KEY], region: 'eu-west-1', nowMs: () => ms });
    await expect(at(signedAtMs + 300_000)(request)).resolves.toMatchObject({ accessKeyId: KEY.accessKeyId });
    const error = await at(signedAtMs + 300_001)(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect((error as Error).message).toBe(`Signature expired: X-Amz-Date ${date} plus X-Amz-Expires 300 s is before the server clock.`);
  });

  it('is refused with 401 when dated further ahead of the server clock than the allowed skew', async () => {
    const request = await presigned();
    const early = createSigV4Verifier({ credentials: [KEY], region: 'eu-west-1', nowMs: () => Date.now() - 10 * 60_000 });
    const error = await early(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    // X-Amz-Date has whole seconds: the URL was signed up to 1 s before the test's Date.now().
    expect((error as Error).message).toMatch(/^Signature expired: X-Amz-Date \d{8}T\d{6}Z is (599|600) s from the server clock \(at most 300 s allowed\)\.$/);
  });

  it('is refused with 403 when scoped to another region', async () => {
    const request = await presigned({ credentials: KEY, region: 'us-east-1' });
    await expect(verify(request)).rejects.toThrow(new ForbiddenError("Credential scope us-east-1/execute-api is not this API's eu-west-1/execute-api."));
  });

  it('is refused with 403 when scoped to another date than its X-Amz-Date', async () => {
    const request = await presigned();
    const credential = new URLSearchParams(request.path.split('?')[1]).get('X-Amz-Credential') as string;
    const tampered = withParam(request, 'X-Amz-Credential', credential.replace(/\/\d{8}\//, '/20000101/'));
    await expect(verify(tampered)).rejects.toThrow(/^Credential scope date 20000101 does not match X-Amz-Date/);
  });

  it('is refused with 403 when a signed query parameter, the expiry or the path was changed', async () => {
    const request = await presigned();
    await expect(verify(withParam(request, 'batched', '0'))).rejects.toThrow('The request signature does not match');
    await expect(verify(withParam(request, 'X-Amz-Expires', '299'))).rejects.toThrow('The request signature does not match');
    await expect(verify({ ...request, path: request.path.replace('/v1/watch', '/v1/other') })).rejects.toThrow('The request signature does not match');
    await expect(verify({ ...request, path: `${request.path}&extra=1` })).rejects.toThrow('The request signature does not match');
  });

  it('is refused with 403 when signed with the wrong secret or an unknown key', async () => {
    await expect(verify(await presigned({ credentials: { ...KEY, secretAccessKey: 'not-the-secret' }, region: 'eu-west-1' }))).rejects.toThrow(
      'The request signature does not match',
    );
    await expect(verify(await presigned({ credentials: { ...KEY, accessKeyId: 'AKIDOTHER' }, region: 'eu-west-1' }))).rejects.toThrow(
      new ForbiddenError('Unknown access key id "AKIDOTHER".'),
    );
  });

  it('is refused with 401 when a parameter is malformed, missing or repeated', async () => {
    const request = await presigned();
    for (const [name, value] of [
      ['X-Amz-Algorithm', 'AWS4-HMAC-SHA1'],
      ['X-Amz-Credential', 'AKIDEXAMPLE'],
      ['X-Amz-Date', '2026-11-24'],
      ['X-Amz-Expires', '0'],
      ['X-Amz-Expires', '604801'],
      ['X-Amz-Expires', '1e3'],
      ['X-Amz-SignedHeaders', 'Host'],
      ['X-Amz-Signature', 'abc'],
    ] as const) {
      await expect(verify(withParam(request, name, value)), `${name}=${value}`).rejects.toThrow(UnauthorizedError);
    }
    await expect(verify({ ...request, path: request.path.replace(/&?X-Amz-Expires=\d+/, '') })).rejects.toThrow('expected exactly one X-Amz-Expires');
    await expect(verify({ ...request, path: `${request.path}&X-Amz-Date=20261124T000000Z` })).rejects.toThrow('expected exactly one X-Amz-Date');
  });
});

describe('the local verifier refuses', () => {
  it('a request without Authorization with 401', async () => {
    const request = await signed();
    delete request.headers.authorization;
    await expect(verify(request)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it('a malformed Authorization header with 401', async () => {
    const request = await signed();
    request.headers.authorization = 'Bearer abc';
    await expect(verify(request)).rejects.toThrow('Malformed Authorization header');
  });

  it('a signature dated outside the allowed skew with 401', async () => {
    const request = await signed();
    const late = createSigV4Verifier({ credentials: [KEY], region: 'eu-west-1', nowMs: () => Date.now() + 10 * 60_000 });
    const error = await late(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect((error as Error).message).toMatch(/^Signature expired: X-Amz-Date \d{8}T\d{6}Z is 60\d s from the server clock \(at most 300 s allowed\)\.$/);
  });

  it('an unknown access key with 403', async () => {
    const request = await signed({ credentials: { accessKeyId: 'AKIDOTHER', secretAccessKey: KEY.secretAccessKey }, region: 'eu-west-1' });
    await expect(verify(request)).rejects.toThrow(new ForbiddenError('Unknown access key id "AKIDOTHER".'));
  });

  it('a signature made with the wrong secret with 403', async () => {
    const request = await signed({ credentials: { ...KEY, secretAccessKey: 'not-the-secret' }, region: 'eu-west-1' });
    await expect(verify(request)).rejects.toThrow('The request signature does not match');
  });

  it('a body changed after signing with 403', async () => {
    const request = await signed();
    await expect(verify({ ...request, body: '{"holder":"mallory","ttlMs":15000}' })).rejects.toBeInstanceOf(ForbiddenError);
  });

  it('a body changed after signing even when the hash header is not signed', async () => {
    // Sign with the plain package and no body-hash header, as some SDKs do for execute-api.
    const signer = new SignatureV4({ service: 'execute-api', region: 'eu-west-1', sha256: Sha256, credentials: KEY, applyChecksum: false });
    const out = await signer.sign(
      new HttpRequest({ method: 'POST', hostname: 'localhost', path: '/v1/leases/a/acquire', headers: { host: 'localhost' }, body: '{"a":1}' }),
    );
    const request = { method: 'POST', path: '/v1/leases/a/acquire', headers: out.headers as Record<string, string>, host: 'localhost', body: '{"a":1}' };
    await expect(verify(request)).resolves.toMatchObject({ accessKeyId: KEY.accessKeyId });
    await expect(verify({ ...request, body: '{"a":2}' })).rejects.toBeInstanceOf(ForbiddenError);
  });

  it('a signature for another region with 403', async () => {
    const request = await signed({ credentials: KEY, region: 'us-east-1' });
    await expect(verify(request)).rejects.toThrow('Credential scope us-east-1/execute-api is not this API\'s eu-west-1/execute-api.');
  });

  it('a request whose method was changed with 403', async () => {
    const request = await signed();
    await expect(verify({ ...request, method: 'PUT' })).rejects.toBeInstanceOf(ForbiddenError);
  });
});
