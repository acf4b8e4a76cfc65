// OpenAPI 3.1 documents of the two HTTP APIs, made from the schemas the routes validate with (TypeBox
// schemas are JSON Schema): the admin API from its table (src-shared/contract/admin-routes.ts), the
// agent API from the routes its app registers. `npm run openapi` writes them to docs/; a test checks
// the committed ones are up to date.
import type { RouteOptions } from 'fastify';
import { Type, type TSchema } from 'typebox';
import * as contract from '../../../src-shared/contract/index.ts';
import { adminRoutes, type AdminEndpoint, type SchemaName } from '../../../src-shared/contract/admin-routes.ts';
import { ROLE_PERMISSIONS, type Permission, type RoutePermission } from '../../../src-shared/contract/permissions.ts';
import { ROLES } from '../../../src-shared/contract/rules.ts';

type Json = Record<string, unknown>;

interface Operation {
  method: string;
  path: string;
  operation: Json;
}

/** `/api/agents/:id` → `/api/agents/{id}`. */
const openApiPath = (path: string) => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');

/** The JSON Schema of a TypeBox schema: its enumerable keys (TypeBox's own markers are not). */
const plain = (schema: TSchema): Json => JSON.parse(JSON.stringify(schema)) as Json;

/** The contract's named schemas by identity: a schema nested in another one is written as a `$ref` to its name. */
const schemaNames = new Map<object, SchemaName>(
  (Object.entries(contract) as [string, unknown][])
    .filter((entry): entry is [SchemaName, TSchema] => Type.IsSchema(entry[1]))
    .sort(([a], [b]) => a.localeCompare(b))
    .reverse() // the first name in order wins when one schema has two
    .map(([name, schema]) => [schema, name]),
);

/** A schema as JSON, each named schema nested in it (never the root) replaced by a `$ref`; the names it refers to go to `used`. */
function withRefs(value: unknown, used: Set<SchemaName>, root = true): unknown {
  if (Array.isArray(value)) return value.map((item) => withRefs(item, used, false));
  if (value === null || typeof value !== 'object') return value;
  const name = root ? undefined : schemaNames.get(value);
  if (name !== undefined) {
    used.add(name);
    return ref(name);
  }
  // Enumerable string keys only, as JSON.stringify writes them: TypeBox's own markers are not.
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withRefs(item, used, false)]));
}

/** One parameter per property of a params or querystring schema. */
function parameters(where: 'path' | 'query', schema: TSchema | undefined, used = new Set<SchemaName>()): Json[] {
  if (!schema) return [];
  const { properties = {}, required = [] } = withRefs(schema, used) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: where,
      required: where === 'path' || required.includes(name),
      ...(typeof description === 'string' && { description }),
      schema: rest,
    };
  });
}

function paths(operations: Operation[]): Json {
  const out: Record<string, Json> = {};
  for (const { method, path, operation } of operations) {
    const key = openApiPath(path);
    out[key] = { ...out[key], [method.toLowerCase()]: operation };
  }
  return out;
}

const jsonContent = (schema: Json) => ({ content: { 'application/json': { schema } } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function statusText(status: string): string {
  const texts: Record<string, string> = {
    200: 'OK',
    201: 'Created',
    202: 'Accepted',
    204: 'No content',
    206: 'Partial content',
    302: 'Redirect',
    400: 'Bad request',
    409: 'Conflict',
    502: 'Bad gateway',
  };
  return texts[status] ?? `HTTP ${status}`;
}

/** The admin API: every entry of the table, its named schemas under components. */
/** Who may call a route, in its description: the permission and the roles that hold it (403 for the others). */
function permissionText(rule: RoutePermission): string {
  const holders = (permission: Permission) => ROLES.filter((role) => ROLE_PERMISSIONS[role].includes(permission)).join(', ');
  if (rule === 'public') return 'Public: no credential needed.';
  if (rule === 'signed-in') return 'Any signed-in role.';
  if (typeof rule === 'string') return `Needs \`${rule}\` (${holders(rule)}); other roles get 403 ERROR_FORBIDDEN.`;
  if ('field' in rule) {
    const each = Object.entries(rule.values).map(([value, permission]) => `${value}: \`${permission}\` (${holders(permission)})`);
    return `Needs, by \`${rule.field}\`: ${each.join('; ')}; other roles get 403 ERROR_FORBIDDEN.`;
  }
  const extra = [...new Set(Object.values(rule.keys))].map(
    (permission) =>
      `${Object.keys(rule.keys)
        .filter((key) => rule.keys[key] === permission)
        .map((key) => `\`${key}\``)
        .join(', ')} also need \`${permission}\` (${holders(permission)})`,
  );
  return `Needs \`${rule.permission}\` (${holders(rule.permission)}); ${extra.join('; ')}; other roles get 403 ERROR_FORBIDDEN.`;
}

export function adminOpenApi(version: string): Json {
  const used = new Set<SchemaName>(['ApiErrorBody']);
  const named = (name: SchemaName) => {
    used.add(name);
    return ref(name);
  };
  const operations: Operation[] = Object.entries(adminRoutes).map(([name, endpoint]) => {
    const entry: AdminEndpoint = endpoint;
    const signIn = !entry.path.startsWith('/api/');
    const operation: Json = {
      operationId: name,
      summary: entry.summary,
      description: permissionText(entry.permission),
      'x-permission': entry.permission,
      tags: [name.includes('.') ? name.slice(0, name.indexOf('.')) : signIn ? 'sign-in' : 'server'],
    };
    const parameterList = [
      ...parameters('path', entry.params && (contract[entry.params] as TSchema), used),
      ...parameters('query', entry.querystring && (contract[entry.querystring] as TSchema), used),
    ];
    if (parameterList.length > 0) operation.parameters = parameterList;
    if (typeof entry.body === 'string') {
      operation.requestBody = { required: !Type.IsOptional(contract[entry.body]), ...jsonContent(named(entry.body)) };
    } else if (entry.body) {
      operation.requestBody = {
        required: true,
        content: { [entry.body.contentType]: { schema: { type: 'string', format: 'binary' } } },
      };
    }
    const responses: Json = {};
    for (const [status, answer] of Object.entries(entry.response)) {
      if (answer === null) responses[status] = { description: statusText(status) };
      else if (typeof answer === 'string') responses[status] = { description: statusText(status), ...jsonContent(named(answer)) };
      else
        responses[status] = {
          description: statusText(status),
          content: { [answer.contentType]: { schema: { type: 'string' } } },
        };
    }
    if (entry.path !== '/auth')
      responses.default = { description: 'Refused: `{ error, message }`', ...jsonContent(ref('ApiErrorBody')) };
    operation.responses = responses;
    // The console's sign-in pages need no credential (they are what makes one).
    if (signIn) operation.security = [];
    return { method: entry.method, path: entry.path, operation };
  });
  // Each schema used, and each named schema they refer to, once.
  const schemas: Record<string, unknown> = {};
  for (let added = true; added;) {
    added = false;
    for (const name of [...used]) {
      if (name in schemas) continue;
      schemas[name] = withRefs(contract[name], used);
      added = true;
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'MDM Console admin API',
      version,
      description:
        'The admin listener (127.0.0.1 by default): the API under /api, the console sign-in under /auth. See docs/admin-api.md. Generated by `npm run openapi` from src-shared/contract/admin-routes.ts.',
    },
    security: [{ adminToken: [] }, { consoleSession: [] }],
    paths: paths(operations),
    components: {
      securitySchemes: {
        adminToken: { type: 'http', scheme: 'bearer', description: 'The admin token (DIR/admin-token)' },
        consoleSession: { type: 'apiKey', in: 'cookie', name: 'mdm_console', description: 'The console session' },
      },
      schemas: Object.fromEntries(
        Object.keys(schemas)
          .sort()
          .map((name) => [name, schemas[name]]),
      ),
    },
  };
}

/** The agent API: the routes its app registers, with the schemas they validate with. */
export function agentOpenApi(version: string, routes: readonly RouteOptions[]): Json {
  const operations: Operation[] = routes.flatMap((route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const schema = (route.schema ?? {}) as Partial<Record<'params' | 'querystring' | 'body', TSchema>> & {
      response?: Record<string, TSchema>;
    };
    const sessionPhase = (route.config as { session?: string } | undefined)?.session;
    const open = !route.url.startsWith('/api/') || sessionPhase === 'none';
    return methods.map((method) => {
      const operation: Json = {};
      const parameterList = [...parameters('path', schema.params), ...parameters('query', schema.querystring)];
      if (parameterList.length > 0) operation.parameters = parameterList;
      if (schema.body) operation.requestBody = { required: !Type.IsOptional(schema.body), ...jsonContent(plain(schema.body)) };
      const responses: Json = {};
      for (const [status, answer] of Object.entries(schema.response ?? {})) {
        responses[status] = { description: statusText(status), ...jsonContent(plain(answer)) };
      }
      if (Object.keys(responses).length === 0) responses['200'] = { description: 'See docs/agent-api.md' };
      if (route.url.startsWith('/api/')) {
        responses.default = {
          description: 'Refused: `[code, message]`',
          ...jsonContent({ type: 'array', prefixItems: [{ type: 'string' }, { type: 'string' }], minItems: 2, maxItems: 2 }),
        };
      }
      operation.responses = responses;
      if (open) operation.security = [];
      return { method, path: route.url, operation };
    });
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'MDM Console agent API',
      version,
      description:
        "The LAN listener devices talk to: the enrollment API under /api (its contract: the spec's enrollment-api.md) and the deeplink page. See docs/agent-api.md. Generated by `npm run openapi` from the schemas the routes validate with.",
    },
    security: [{ sessionTokenHeader: [] }, { sessionTokenQuery: [] }],
    paths: paths(operations),
    components: {
      securitySchemes: {
        sessionTokenHeader: { type: 'apiKey', in: 'header', name: 'Session-Token' },
        sessionTokenQuery: { type: 'apiKey', in: 'query', name: 'session_token' },
      },
    },
  };
}
