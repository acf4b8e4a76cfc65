// The admin table (src-shared/contract/admin-routes.ts) and the routes the admin listener really
// serves are the same set: a route registered by hand, or an entry nobody registers, fails here.
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRoutes } from '../../../src-shared/contract/admin-routes.ts';
import { fastifySchemaOf } from '../../../src-main/backend/http/route-table.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';

/** What the console's static server registers besides the API: the console, its assets, its pages. */
const isConsoleRoute = (url: string) => !url.startsWith('/api') && !url.startsWith('/auth');

describe('the admin route table', () => {
  let t: TestBackend;
  const registered: RouteOptions[] = [];

  beforeAll(async () => {
    t = await startTestBackend({ onRoute: (side, route) => void (side === 'admin' && registered.push(route)) });
  });
  afterAll(() => t.stop());

  // GET routes also answer HEAD (Fastify adds one per GET): those are not entries of their own.
  const served = () =>
    registered
      .flatMap((route) => (Array.isArray(route.method) ? route.method : [route.method]).map((method) => ({ method, route })))
      .filter(({ method, route }) => method !== 'HEAD' && !isConsoleRoute(route.url));
  const key = (method: string, path: string) => `${method} ${path}`;

  it('lists every route the admin listener serves, and nothing it does not', () => {
    const servedKeys = served().map(({ method, route }) => key(method, route.url));
    const tableKeys = Object.values(adminRoutes).map((entry) => key(entry.method, entry.path));
    expect(servedKeys.length).toBeGreaterThan(60);
    expect(
      servedKeys.filter((k) => !tableKeys.includes(k)),
      'registered but not in src-shared/contract/admin-routes.ts',
    ).toEqual([]);
    expect(
      tableKeys.filter((k) => !servedKeys.includes(k)),
      'in src-shared/contract/admin-routes.ts but not registered',
    ).toEqual([]);
    expect(new Set(tableKeys).size, 'two entries with one method and path').toBe(tableKeys.length);
  });

  it('registers each route with the schemas its entry names', () => {
    const byKey = new Map(served().map(({ method, route }) => [key(method, route.url), route]));
    for (const [name, entry] of Object.entries(adminRoutes)) {
      const schema = byKey.get(key(entry.method, entry.path))?.schema ?? {};
      const expected = fastifySchemaOf(entry);
      // The contract's own schema objects (the same ones the client's types and the OpenAPI document come from).
      for (const part of ['params', 'querystring', 'body'] as const) expect(schema[part], `${name} ${part}`).toBe(expected[part]);
      const responses = (schema.response ?? {}) as Record<string, unknown>;
      const expectedResponses = (expected.response ?? {}) as Record<string, unknown>;
      expect(Object.keys(responses), `${name} responses`).toEqual(Object.keys(expectedResponses));
      for (const status of Object.keys(expectedResponses))
        expect(responses[status], `${name} ${status}`).toBe(expectedResponses[status]);
    }
  });
});
