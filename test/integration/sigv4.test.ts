import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ForbiddenError, LeaseClient, UnauthorizedError, sigv4Signer } from 'leasehold';
import { startTestServer, type TestServer } from '../support/local-server.js';

// The local server verifies SigV4 as API Gateway's IAM authorization does; the SDK signs with the
// maintained AWS packages. This is the signing path end to end, over real HTTP.
const KEY = { accessKeyId: 'AKIDLEASEHOLDTEST', secretAccessKey: 'c2VjcmV0LWtleS1mb3ItbG9jYWwtdGVzdHM' };
const REGION = 'eu-central-1';

let server: TestServer;
let seq = 0;

beforeAll(async () => {
  server = await startTestServer({ sigv4: { credentials: [KEY], region: REGION } });
});

afterAll(async () => {
  await server?.close();
});

const savedEnv = { ...process.env };
afterEach(() => {
  process.env = { ...savedEnv };
});

function uniqueName(): string {
  seq += 1;
  return `sigv4:${seq}-${Math.random().toString(36).slice(2, 8)}`;
}

describe('SigV4 against the local server', () => {
  it('accepts signed acquire, renew, describe, list and release', async () => {
    const client = new LeaseClient({ endpoint: server.url, signer: sigv4Signer({ region: REGION, credentials: KEY }) });
    const name = uniqueName();
    const result = await client.acquire(name, { holder: 'signed', ttlMs: 5_000, metadata: { note: 'ünïcode body' } });
    expect(result.acquired).toBe(true);
    if (!result.acquired) return;
    await client.renew(name, result.lease);
    await expect(client.describe(name)).resolves.toMatchObject({ holder: 'signed' });
    await expect(client.list({ prefix: name, limit: 10 })).resolves.toMatchObject({ leases: [{ name }] });
    await expect(client.release(name, result.lease)).resolves.toMatchObject({ holder: null });
  });

  it('signs with the default credential provider chain when given no credentials', async () => {
    process.env.AWS_ACCESS_KEY_ID = KEY.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = KEY.secretAccessKey;
    const client = new LeaseClient({ endpoint: server.url, signer: sigv4Signer({ region: REGION }) });
    await expect(client.acquire(uniqueName(), { holder: 'from-env', ttlMs: 5_000 })).resolves.toMatchObject({ acquired: true });
  });

  it('rejects an unsigned request with 401 UnauthorizedError', async () => {
    const client = new LeaseClient({ endpoint: server.url });
    const error = await client.describe(uniqueName()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ status: 401 });
  });

  it('rejects a signature made with the wrong secret with 403 ForbiddenError', async () => {
    const client = new LeaseClient({
      endpoint: server.url,
      signer: sigv4Signer({ region: REGION, credentials: { ...KEY, secretAccessKey: 'wrong' } }),
    });
    const error = await client.acquire(uniqueName(), { holder: 'mallory', ttlMs: 5_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ForbiddenError);
    expect(error).toMatchObject({ status: 403 });
  });

  it('rejects an unknown access key with 403 ForbiddenError', async () => {
    const client = new LeaseClient({
      endpoint: server.url,
      signer: sigv4Signer({ region: REGION, credentials: { accessKeyId: 'AKIDUNKNOWN', secretAccessKey: KEY.secretAccessKey } }),
    });
    await expect(client.describe(uniqueName())).rejects.toBeInstanceOf(ForbiddenError);
  });

  it('rejects a body altered after signing with 403', async () => {
    // A hook-free way to tamper: a fetch that rewrites the body the signer already signed.
    const tampering: typeof fetch = (input, init) =>
      fetch(input, { ...init, body: typeof init?.body === 'string' ? init.body.replace('"honest"', '"mallory"') : init?.body });
    const client = new LeaseClient({ endpoint: server.url, fetch: tampering, signer: sigv4Signer({ region: REGION, credentials: KEY }) });
    await expect(client.acquire(uniqueName(), { holder: 'honest', ttlMs: 5_000 })).rejects.toBeInstanceOf(ForbiddenError);
  });
});
