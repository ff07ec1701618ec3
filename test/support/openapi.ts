import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'vitest';

/** The published OpenAPI document, and a check that a response matches it. */
export const openapi = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { responses: Record<string, { content?: { 'application/json': { schema: { $ref: string } } } }> }>>;
};

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(openapi, 'openapi.json');

/** Asserts that `body` is what the document promises for `method path` answering `status`. */
export function expectContract(method: string, pathTemplate: string, status: number, body: unknown): void {
  const operation = openapi.paths[pathTemplate]?.[method.toLowerCase()];
  expect(operation, `${method} ${pathTemplate} is documented`).toBeDefined();
  const response = operation!.responses[String(status)];
  expect(response, `${method} ${pathTemplate} documents status ${status}`).toBeDefined();
  const ref = response!.content?.['application/json'].schema.$ref;
  expect(ref).toBeDefined();
  const validate = ajv.getSchema(`openapi.json${ref}`);
  expect(validate).toBeDefined();
  const valid = validate!(body);
  expect(valid, `${method} ${pathTemplate} ${status} body ${JSON.stringify(body)} matches ${ref}: ${ajv.errorsText(validate!.errors)}`).toBe(true);
}
