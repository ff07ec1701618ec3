import { randomUUID } from 'node:crypto';
import { sigv4Signer } from 'leasehold';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRouteAuthorizer } from '../../local/route-grants.js';
import { startTestServer, type TestServer } from '../support/local-server.js';

// The local server in SigV4 mode enforces each credential's grants on every HTTP route, as IAM
// enforces the construct's grant ARNs in AWS (infra/grant-routes.ts): real signed requests over
// HTTP against the real handlers and DynamoDB Local.

const REGION = 'eu-west-1';
/** grantLeases(role, 'team-a.'): the default for a credential with prefixes. */
const TEAM_A = { accessKeyId: 'AKIDGRANTSTEAMA', secretAccessKey: 'dGVhbS1hLWdyYW50cy1zZWNyZXQ', prefixes: ['team-a.'] };
/** grantRead(role, 'team-a.'). */
const READER = { accessKeyId: 'AKIDGRANTSREADER', secretAccessKey: 'cmVhZGVyLWdyYW50cy1zZWNyZXQ', prefixes: ['team-a.'], access: ['read' as const] };
/** grantAdmin(role, 'team-a.'). */
const OPERATOR = { accessKeyId: 'AKIDGRANTSOPERATOR', secretAccessKey: 'b3BlcmF0b3ItZ3JhbnRzLXNlY3JldA', prefixes: ['team-a.'], access: ['admin' as const] };
/** No prefixes, no access: every route (grantLeases and grantAdmin without a prefix). */
const ROOT = { accessKeyId: 'AKIDGRANTSROOT', secretAccessKey: 'cm9vdC1ncmFudHMtc2VjcmV0LWtleQ' };

type Credential = { accessKeyId: string; secretAccessKey: string };

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ watch: true, semaphores: true, sigv4: { credentials: [TEAM_A, READER, OPERATOR, ROOT], region: REGION } });
});
afterAll(async () => {
  await server?.close();
});

/** A request signed with `credential`, sent over HTTP; the status and the error code, if any. */
async function call(credential: Credential, method: string, path: string, body?: unknown): Promise<{ status: number; code: string | undefined }> {
  const url = new URL(path, server.url);
  const text = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = text === undefined ? {} : { 'content-type': 'application/json' };
  const signed = await sigv4Signer({ region: REGION, credentials: credential })({ method, url, headers, body: text });
  const response = await fetch(url, { method, headers: { ...headers, ...signed }, ...(text === undefined ? {} : { body: text }) });
  const answer = (await response.json().catch(() => ({}))) as { error?: { code?: string } };
  return { status: response.status, code: answer.error?.code };
}

const id = () => randomUUID().slice(0, 8);
const LEASE_ID = 'a'.repeat(32);
const PERMIT_ID = 'b'.repeat(32);

/** One request of every route, for names under `prefix` (a lease, a batch prefix, a group, a semaphore). */
function everyRoute(prefix: string): Array<{ route: string; method: string; path: string; body?: unknown }> {
  const name = `${prefix}${id()}`;
  return [
    { route: 'acquire', method: 'POST', path: `/v1/leases/${name}/acquire`, body: { holder: 'w', ttlMs: 5_000 } },
    { route: 'renew', method: 'POST', path: `/v1/leases/${name}/renew`, body: { leaseId: LEASE_ID, token: 1 } },
    { route: 'release', method: 'POST', path: `/v1/leases/${name}/release`, body: { leaseId: LEASE_ID, token: 1 } },
    { route: 'handoff', method: 'POST', path: `/v1/leases/${name}/handoff`, body: { leaseId: LEASE_ID, token: 1, to: 'w2' } },
    { route: 'revoke', method: 'POST', path: `/v1/leases/${name}/revoke`, body: { reason: 'test' } },
    { route: 'renew-batch', method: 'POST', path: `/v1/prefixes/${prefix}/renew`, body: { grants: [{ name, leaseId: LEASE_ID, token: 1 }] } },
    { route: 'handoff-batch', method: 'POST', path: `/v1/prefixes/${prefix}/handoff`, body: { handoffs: [{ name, leaseId: LEASE_ID, token: 1, to: 'w2' }] } },
    { route: 'describe', method: 'GET', path: `/v1/leases/${name}` },
    { route: 'list', method: 'GET', path: `/v1/leases?prefix=${prefix}` },
    { route: 'group-describe', method: 'GET', path: `/v1/groups/${prefix}g` },
    { route: 'semaphore-acquire', method: 'POST', path: `/v1/semaphores/${name}/acquire`, body: { holder: 'w', ttlMs: 5_000, limit: 2 } },
    { route: 'semaphore-renew', method: 'POST', path: `/v1/semaphores/${name}/renew`, body: { permitId: PERMIT_ID, token: 1 } },
    { route: 'semaphore-release', method: 'POST', path: `/v1/semaphores/${name}/release`, body: { permitId: PERMIT_ID, token: 1 } },
    { route: 'semaphore-describe', method: 'GET', path: `/v1/semaphores/${name}` },
    { route: 'rwlock-renew-batch', method: 'POST', path: `/v1/prefixes/${prefix}/rwlocks/renew`, body: { grants: [{ name, leaseId: LEASE_ID, token: 1 }] } },
  ];
}

/** Which routes a credential reached (its handler answered: anything but 403 FORBIDDEN) and which were refused. */
async function reached(credential: Credential, prefix: string): Promise<{ served: string[]; refused: string[] }> {
  const served: string[] = [];
  const refused: string[] = [];
  for (const request of everyRoute(prefix)) {
    const answer = await call(credential, request.method, request.path, request.body);
    expect(answer.status, `${request.route}: ${answer.status} ${answer.code}`).toBeLessThan(500);
    if (answer.status === 403) {
      expect(answer.code, request.route).toBe('FORBIDDEN');
      refused.push(request.route);
    } else {
      served.push(request.route);
    }
  }
  return { served, refused };
}

const ALL_ROUTES = everyRoute('x.').map((r) => r.route);
const without = (...ids: string[]) => ALL_ROUTES.filter((route) => !ids.includes(route));

describe('the local server in SigV4 mode enforces each credential’s grants on every route', () => {
  it('a key for team-a. (grantLeases) reaches every route under team-a. but revoke and list', async () => {
    expect(await reached(TEAM_A, 'team-a.')).toEqual({ served: without('revoke', 'list'), refused: ['revoke', 'list'] });
  });

  it('a key for team-a. is refused 403 FORBIDDEN on every route under team-b.: leases, batches, groups and semaphores', async () => {
    expect(await reached(TEAM_A, 'team-b.')).toEqual({ served: [], refused: ALL_ROUTES });
  });

  it('a key for team-a. reads the group team-a (its prefix names it), and not team-ab', async () => {
    expect((await call(TEAM_A, 'GET', '/v1/groups/team-a')).status).toBe(200);
    expect(await call(TEAM_A, 'GET', '/v1/groups/team-ab')).toEqual({ status: 403, code: 'FORBIDDEN' });
  });

  it('a key for team-a. cannot list, not even with ?prefix=team-a. (IAM sees no query: no prefix grant includes list)', async () => {
    expect(await call(TEAM_A, 'GET', '/v1/leases?prefix=team-a.')).toEqual({ status: 403, code: 'FORBIDDEN' });
    expect(await call(TEAM_A, 'GET', '/v1/leases')).toEqual({ status: 403, code: 'FORBIDDEN' });
  });

  it('a batch under team-a. naming a team-b. lease is refused by the handler, as in AWS, and writes nothing', async () => {
    const answer = await call(TEAM_A, 'POST', '/v1/prefixes/team-a./renew', { grants: [{ name: `team-b.${id()}`, leaseId: LEASE_ID, token: 1 }] });
    expect(answer).toEqual({ status: 400, code: 'VALIDATION_ERROR' });
  });

  it('a read key for team-a. (grantRead) reaches the GET routes under team-a. only', async () => {
    expect(await reached(READER, 'team-a.')).toEqual({ served: ['describe', 'group-describe', 'semaphore-describe'], refused: without('describe', 'group-describe', 'semaphore-describe') });
    expect((await reached(READER, 'team-b.')).served).toEqual([]);
  });

  it('an operator key for team-a. (grantAdmin) revokes under team-a. only, and nothing else', async () => {
    expect(await reached(OPERATOR, 'team-a.')).toEqual({ served: ['revoke'], refused: without('revoke') });
    expect((await reached(OPERATOR, 'team-b.')).served).toEqual([]);
  });

  it('the revoke an operator key is granted takes effect: a team-a. lease held by a team-a. key is revoked', async () => {
    const name = `team-a.${id()}`;
    expect((await call(TEAM_A, 'POST', `/v1/leases/${name}/acquire`, { holder: 'w', ttlMs: 5_000 })).status).toBe(200);
    expect((await call(OPERATOR, 'POST', `/v1/leases/${name}/revoke`, { reason: 'operator test' })).status).toBe(200);
  });

  it('a key without prefixes reaches every route, list and revoke included', async () => {
    expect(await reached(ROOT, 'team-b.')).toEqual({ served: ALL_ROUTES, refused: [] });
  });

  it('an operator key (grantAdmin only) gets no watch: its $connect is refused', async () => {
    const url = `${server.url.replace('http://', 'ws://')}/v1/watch`;
    const headers = await sigv4Signer({ region: REGION, credentials: OPERATOR })({ method: 'GET', url: new URL(url), headers: {}, body: undefined });
    const ws = new WebSocket(url, { headers });
    const status = await new Promise<number>((resolve, reject) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => reject(new Error('the watch accepted a key whose grants include no watch')));
      ws.once('error', () => undefined);
    });
    ws.terminate();
    expect(status).toBe(403);
  });
});

describe('the local credentials’ grants are checked at start', () => {
  it('refuses an access that is not a grant method, naming the credential', () => {
    expect(() => createRouteAuthorizer([{ accessKeyId: 'K', access: ['write' as never] }])).toThrow("Expected `sigv4.credentials[0].access` to hold only 'leases', 'read', 'admin'");
  });

  it('refuses a prefix outside the lease-name rules (an IAM wildcard, a slash), naming the credential', () => {
    expect(() => createRouteAuthorizer([{ accessKeyId: 'K' }, { accessKeyId: 'L', prefixes: ['team-*'] }])).toThrow('Expected `sigv4.credentials[1].prefixes`');
    expect(() => createRouteAuthorizer([{ accessKeyId: 'K', prefixes: ['a/b'] }])).toThrow('Expected `sigv4.credentials[0].prefixes`');
  });
});
