import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../client/src/protocol/index.js';

interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
const document = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as OpenApiDocument;

/** "POST /v1/leases/{name}/acquire" for each operation the document describes. */
function documentedOperations(): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => HTTP_METHODS.has(key))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
}

describe('docs/openapi.json against the protocol route table', () => {
  it('describes every route of the table, with the same method and path', () => {
    const documented = new Set(documentedOperations());
    for (const route of ROUTES) expect(documented.has(`${route.method} ${route.path}`), `${route.method} ${route.path}`).toBe(true);
  });

  it('describes no operation the table does not have', () => {
    const routes = new Set(ROUTES.map((route) => `${route.method} ${route.path}`));
    for (const operation of documentedOperations()) expect(routes.has(operation), operation).toBe(true);
  });
});
