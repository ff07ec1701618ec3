import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../client/src/protocol/index.js';
import { REDACTED, redactSecrets } from '../../functions/logging.js';

const leaseId = '0123456789abcdef0123456789abcdef';
const requestId = 'Zq3-9_kLmN0pQrStUvWx';

/** What the logger would print for `value`. */
function printed(value: unknown): string {
  return JSON.stringify(redactSecrets(value));
}

describe('log redaction', () => {
  it('replaces leaseId and requestId properties at any depth, whatever their case or separator', () => {
    const out = printed({ a: { leaseId, nested: [{ request_id: requestId }, { LEASE_ID: { S: leaseId } }] } });
    expect(out).not.toContain(leaseId);
    expect(out).not.toContain(requestId);
    expect(out).toContain(REDACTED);
  });

  it("replaces a semaphore's permitId like a leaseId: as a property, labelled in text, and in the item's attribute names", () => {
    const permitId = 'fedcba9876543210fedcba9876543210';
    const other = '00112233445566778899aabbccddeeff';
    const out = printed({
      body: JSON.stringify({ permitId, token: 3 }),
      message: `permit_id=${permitId} refused`,
      item: { pk: 'backfills', [`p_${permitId}`]: { holder: 'w1' }, [`t_${other}`]: 4 },
      error: new Error(`The conditional request failed for t_${other}`),
    });
    expect(out).not.toContain(permitId);
    expect(out).not.toContain(other);
    expect(out).toContain('backfills');
    expect(out).toContain('w1');
  });

  it('replaces DynamoDB expression attribute values named after a secret (":leaseId", ":requestId", ":permitId"), plain or marshalled, and keeps the others', () => {
    const permitId = 'fedcba9876543210fedcba9876543210';
    const input = {
      TableName: 'leases',
      ConditionExpression: 'leaseId = :leaseId AND #token = :token',
      ExpressionAttributeValues: { ':leaseId': leaseId, ':requestId': requestId, ':permitId': permitId, ':token': 7, ':holder': 'w1' },
    };
    const marshalled = { ExpressionAttributeValues: { ':leaseId': { S: leaseId }, ':request_id': { S: requestId }, ':now': { N: '1700000000000' } } };
    const out = redactSecrets({ input, marshalled }) as { input: typeof input; marshalled: typeof marshalled };
    expect(out.input.ExpressionAttributeValues).toEqual({ ':leaseId': REDACTED, ':requestId': REDACTED, ':permitId': REDACTED, ':token': 7, ':holder': 'w1' });
    expect(out.input.ConditionExpression).toBe('leaseId = :leaseId AND #token = :token');
    expect(out.marshalled.ExpressionAttributeValues).toEqual({ ':leaseId': REDACTED, ':request_id': REDACTED, ':now': { N: '1700000000000' } });
  });

  it('redacts expression attribute values quoted in an SDK error: as JSON, truncated JSON in attribute format, or the emulator’s Java text', () => {
    const validation = Object.assign(new Error(`One or more parameter values were invalid: ExpressionAttributeValues={":leaseId":{"S":"${leaseId}"},":requestId":{"S":"${requestId}"},":now":{"N":"5"`), {
      name: 'ValidationException',
      $metadata: { httpStatusCode: 400, requestId: 'N0PQ1RS2TU3VW4XY5Z6A7BC8DEFGHIJKLMNOPQRSTUVWXYZ' },
    });
    const java = `Invalid ConditionExpression: {:leaseId={S: ${leaseId},}, :requestId={S: ${requestId},}, :token={N: 7,}}`;
    const out = redactSecrets({ error: validation, java }) as { error: Error & { $metadata: { requestId: string } }; java: string };
    for (const text of [out.error.message, String(out.error.stack), out.java]) {
      expect(text).not.toContain(leaseId);
      expect(text).not.toContain(requestId);
    }
    expect(out.error.message).toContain('":now":{"N":"5"');
    expect(out.java).toContain(':token={N: 7,}');
    expect(out.error.$metadata.requestId).toBe('N0PQ1RS2TU3VW4XY5Z6A7BC8DEFGHIJKLMNOPQRSTUVWXYZ');
  });

  it('redacts the raw JSON body of a logged event and keeps the rest of it readable', () => {
    const event = { body: JSON.stringify({ leaseId, token: 7 }), rawPath: '/v1/leases/jobs/renew' };
    const out = redactSecrets({ event }) as { event: { body: string; rawPath: string } };
    expect(JSON.parse(out.event.body)).toEqual({ leaseId: REDACTED, token: 7 });
    expect(out.event.rawPath).toBe('/v1/leases/jobs/renew');
  });

  it('redacts JSON nested in a JSON string, a base64-encoded body, and bodies that do not parse', () => {
    const nested = JSON.stringify({ body: JSON.stringify({ requestId, holder: 'w' }) });
    const base64 = { isBase64Encoded: true, body: Buffer.from(JSON.stringify({ leaseId })).toString('base64') };
    const truncated = `{"holder":"w","requestId":"${requestId}","ttlMs":`;
    const out = printed({ nested, base64, truncated });
    expect(out).not.toContain(requestId);
    expect(out).not.toContain(leaseId);
    expect(out).not.toContain(Buffer.from(JSON.stringify({ leaseId })).toString('base64'));
    const decoded = Buffer.from((redactSecrets(base64) as { body: string }).body, 'base64').toString('utf8');
    expect(JSON.parse(decoded)).toEqual({ leaseId: REDACTED });
  });

  it('redacts secrets in query strings', () => {
    const out = printed({ rawQueryString: `prefix=a&leaseId=${leaseId}&requestId=${requestId}` });
    expect(out).not.toContain(leaseId);
    expect(out).not.toContain(requestId);
    expect(out).toContain('prefix=a');
  });

  it('removes a secret found in one place from every other text of the same log item, such as an error message', () => {
    const error = new Error(`no grant ${leaseId} for retry ${requestId}`, { cause: new Error(`still ${leaseId}`) });
    const out = redactSecrets({ request: { leaseId, requestId }, error }) as { error: Error };
    expect(out.error).toBeInstanceOf(Error);
    expect(out.error.message).toBe(`no grant ${REDACTED} for retry ${REDACTED}`);
    expect(String(out.error.stack)).not.toContain(leaseId);
    expect((out.error.cause as Error).message).toBe(`still ${REDACTED}`);
  });

  it('keeps errors as errors of the same class with their fields', () => {
    const out = redactSecrets({ error: new ValidationError('requestId', 'must be 16-64 characters of A-Z a-z 0-9 _ -') }) as { error: ValidationError };
    expect(out.error).toBeInstanceOf(ValidationError);
    expect(out.error.field).toBe('requestId');
    expect(out.error.message).toBe('Invalid `requestId`: must be 16-64 characters of A-Z a-z 0-9 _ -.');
  });

  it('keeps the request ids AWS uses for correlation: API Gateway’s and the SDK’s', () => {
    const out = redactSecrets({
      event: { requestContext: { apiId: 'abc123', requestId: 'JnQW2gfxIAMEbxg=' } },
      error: { $metadata: { httpStatusCode: 400, requestId: 'N0PQ1RS2TU3VW4XY5Z6A7BC8DEFGHIJKLMNOPQRSTUVWXYZ' } },
    });
    expect(out).toEqual({
      event: { requestContext: { apiId: 'abc123', requestId: 'JnQW2gfxIAMEbxg=' } },
      error: { $metadata: { httpStatusCode: 400, requestId: 'N0PQ1RS2TU3VW4XY5Z6A7BC8DEFGHIJKLMNOPQRSTUVWXYZ' } },
    });
  });

  it('copes with cycles and a __proto__ key', () => {
    const looped: Record<string, unknown> = { leaseId };
    looped.self = looped;
    const hostile = JSON.parse(`{"__proto__":{"leaseId":"${leaseId}"}}`) as object;
    expect(() => redactSecrets(looped)).not.toThrow();
    expect(printed({ hostile })).not.toContain(leaseId);
  });

  it('is applied to every function: no code builds a Powertools Logger except the one factory', () => {
    const root = new URL('../../', import.meta.url).pathname;
    const sources = ['functions', 'local'].flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
        .filter((file) => file.endsWith('.ts'))
        .map((file) => join(dir, file)),
    );
    const builders = sources.filter((file) => /new Logger\(/.test(readFileSync(join(root, file), 'utf8')));
    expect(builders).toEqual([join('functions', 'logging.ts')]);
  });
});
