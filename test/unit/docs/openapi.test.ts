// The OpenAPI documents in docs/ are those `npm run openapi` makes from the schemas today (regenerated
// here in memory), and they hold together: every admin endpoint is an operation, every $ref resolves.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminRoutes } from '../../../src-shared/contract/admin-routes.ts';
import { apiDocuments } from '../../../scripts/openapi.ts';

const ROOT = resolve(import.meta.dirname, '../../..');

/** Every `$ref` anywhere in a document. */
function refs(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refs);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) => (key === '$ref' && typeof item === 'string' ? [item] : refs(item)));
}

describe('the OpenAPI documents (docs/admin-api.json, docs/agent-api.json)', () => {
  let fresh: Record<string, string>;
  beforeAll(async () => {
    fresh = await apiDocuments();
  });

  it('are up to date with the schemas', () => {
    expect(Object.keys(fresh).sort()).toEqual(['docs/admin-api.json', 'docs/agent-api.json']);
    for (const [path, text] of Object.entries(fresh)) {
      const committed = readFileSync(join(ROOT, path), 'utf8');
      expect(committed === text, `${path} is stale: run npm run openapi`).toBe(true);
    }
  });

  it('have every admin endpoint as an operation, and every $ref names a schema they define', () => {
    const admin = JSON.parse(fresh['docs/admin-api.json']!);
    const operations = Object.entries(admin.paths as Record<string, Record<string, { operationId: string }>>).flatMap(
      ([path, methods]) => Object.entries(methods).map(([method, operation]) => `${operation.operationId} ${method} ${path}`),
    );
    const expected = Object.entries(adminRoutes).map(
      ([name, entry]) => `${name} ${entry.method.toLowerCase()} ${entry.path.replace(/:(\w+)/g, '{$1}')}`,
    );
    expect(operations.sort()).toEqual(expected.sort());
    for (const path of Object.keys(fresh)) {
      const document = JSON.parse(fresh[path]!);
      const defined = new Set(Object.keys(document.components?.schemas ?? {}).map((name) => `#/components/schemas/${name}`));
      expect(
        refs(document).filter((ref) => !defined.has(ref)),
        path,
      ).toEqual([]);
    }
    const agent = JSON.parse(fresh['docs/agent-api.json']!);
    expect(Object.keys(agent.paths)).toEqual(
      expect.arrayContaining(['/api/initSession', '/api/PluginMdmAgent', '/api/PluginMdmFile/{id}']),
    );
  });
});
