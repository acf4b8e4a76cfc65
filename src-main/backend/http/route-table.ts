// Registers an admin endpoint from its entry in the contract's table (src-shared/contract/admin-routes.ts):
// method, path and schemas come from the entry, the handler's request and reply are typed by them,
// and the permission the entry declares is checked here, before the handler runs: the one place a
// role is enforced (handlers never check one).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
  RouteOptions,
  RouteShorthandOptions,
  onRequestHookHandler,
  preHandlerHookHandler,
} from 'fastify';
import type { TSchema } from 'typebox';
import * as contract from '../../../src-shared/contract/index.ts';
import {
  adminRoutes,
  type AdminEndpoint,
  type AdminRouteName,
  type AdminRoutes,
  type ContractSchemas,
  type SchemaName,
} from '../../../src-shared/contract/admin-routes.ts';
import {
  permissionsNeeded,
  ROLE_PERMISSIONS,
  refusalMessage,
  type Role,
  type RoutePermission,
} from '../../../src-shared/contract/permissions.ts';
import { ApiError } from '../errors.ts';

/** The role each authenticated request acts with, set by the authentication hook (admin-api/app.ts). */
const actingRoles = new WeakMap<object, Role>();

/** Says which role a request acts with: called once it is authenticated, before its route's check. */
export function actsAs(request: object, role: Role): void {
  actingRoles.set(request, role);
}

/**
 * The check of a route's declared permission: 401 when nobody signed in (a route that is not
 * public, registered where no authentication ran, stays closed), 403 naming the role and the
 * permission it lacks. A permission that depends on the body is checked once the body is validated.
 */
function refusalOf(rule: RoutePermission, request: object, body: unknown): ApiError | undefined {
  if (rule === 'public') return undefined;
  const role = actingRoles.get(request);
  if (role === undefined) return new ApiError(401, 'ERROR_UNAUTHORIZED', 'Not signed in');
  const missing = permissionsNeeded(rule, body).find((permission) => !ROLE_PERMISSIONS[role].includes(permission));
  return missing === undefined ? undefined : new ApiError(403, 'ERROR_FORBIDDEN', refusalMessage(role, missing));
}

/** A declaration that reads the body must name fields its body schema has, every value of a field it maps. */
function checkDeclaration(name: string, entry: AdminEndpoint): void {
  const rule = entry.permission;
  if (typeof rule === 'string') return;
  const body = typeof entry.body === 'string' ? (schemaNamed(entry.body) as { properties?: Record<string, TSchema> }) : null;
  const properties = body?.properties ?? {};
  const fields = 'field' in rule ? [rule.field] : Object.keys(rule.keys);
  const unknown = fields.filter((field) => !Object.hasOwn(properties, field));
  if (unknown.length > 0) throw new Error(`admin route ${name}: its permission names ${unknown.join(', ')}, not in its body`);
  if ('field' in rule) {
    const values = literalsOf(properties[rule.field]!);
    const unmapped = values === null ? ['(any string)'] : values.filter((value) => !Object.hasOwn(rule.values, value));
    if (unmapped.length > 0) throw new Error(`admin route ${name}: no permission for ${rule.field} ${unmapped.join(', ')}`);
  }
}

/** The values a schema of string literals allows (a literal or a union of them), else null. */
function literalsOf(schema: TSchema): string[] | null {
  const { const: value, anyOf, enum: members } = schema as { const?: unknown; anyOf?: TSchema[]; enum?: unknown[] };
  if (typeof value === 'string') return [value];
  if (Array.isArray(members) && members.every((member) => typeof member === 'string')) return members as string[];
  if (!Array.isArray(anyOf)) return null;
  const all = anyOf.map(literalsOf);
  return all.every((values) => values !== null) ? all.flat() : null;
}

type Named<E, Key extends string> = E extends { readonly [P in Key]: infer N extends SchemaName }
  ? { [P in Key]: ContractSchemas[N] }
  : unknown;
/** The JSON answers by status; bytes and empty answers carry no schema for Fastify. */
type JsonResponses<R> = {
  -readonly [S in keyof R as R[S] extends SchemaName ? S : never]: R[S] extends SchemaName ? ContractSchemas[R[S]] : never;
};

/** The Fastify schema of an entry, as types: what types its handler's request and reply. */
export type RouteSchemaOf<K extends AdminRouteName> = Named<AdminRoutes[K], 'params'> &
  Named<AdminRoutes[K], 'querystring'> &
  Named<AdminRoutes[K], 'body'> & { response: JsonResponses<AdminRoutes[K]['response']> };

export type AdminHandler<K extends AdminRouteName> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  RouteSchemaOf<K>,
  TypeBoxTypeProvider
>;

/** What a route may add to its entry: how big a body it takes, hooks of its own. */
export type RouteExtras = Pick<RouteShorthandOptions, 'bodyLimit' | 'onRequest' | 'config'>;

/** Where routes are added: any Fastify instance or plugin scope (its prefix is taken off the entry's path). */
export interface RouteScope {
  readonly prefix: string;
  route(options: RouteOptions): unknown;
}

const schemaNamed = (name: SchemaName): TSchema => contract[name] as TSchema;

/** The Fastify schema of an entry: its named schemas, and the response schemas of its JSON answers. */
export function fastifySchemaOf(entry: AdminEndpoint): FastifySchema {
  const schema: FastifySchema = {};
  if (entry.params) schema.params = schemaNamed(entry.params);
  if (entry.querystring) schema.querystring = schemaNamed(entry.querystring);
  if (typeof entry.body === 'string') schema.body = schemaNamed(entry.body);
  const json = Object.entries(entry.response).flatMap(([status, answer]) =>
    typeof answer === 'string' ? [[status, schemaNamed(answer)] as const] : [],
  );
  if (json.length > 0) schema.response = Object.fromEntries(json);
  return schema;
}

/** Registers the handler of table entry `name` in `scope` (mounted at a prefix the entry's path starts with). */
export function adminRoute<K extends AdminRouteName>(
  scope: RouteScope,
  name: K,
  handler: AdminHandler<K>,
  extras: RouteExtras = {},
): void {
  const entry: AdminEndpoint = adminRoutes[name];
  if (!entry.path.startsWith(`${scope.prefix}/`)) {
    throw new Error(`admin route ${name} (${entry.path}) registered in a scope mounted at ${scope.prefix}`);
  }
  checkDeclaration(name, entry);
  const rule = entry.permission;
  // A permission of the route alone is checked on arrival (a refused upload is not read); one that
  // depends on the body, once the body is parsed and validated.
  const byBody = typeof rule === 'object';
  const onArrival: onRequestHookHandler = (request, _reply, done) => {
    done(refusalOf(byBody ? 'signed-in' : rule, request, undefined));
  };
  const beforeHandler: preHandlerHookHandler = (request, _reply, done) => {
    done(refusalOf(rule, request, request.body));
  };
  const own = extras.onRequest === undefined ? [] : Array.isArray(extras.onRequest) ? extras.onRequest : [extras.onRequest];
  scope.route({
    ...extras,
    onRequest: rule === 'public' ? own : [onArrival, ...own],
    ...(byBody ? { preHandler: beforeHandler } : {}),
    method: entry.method,
    url: entry.path.slice(scope.prefix.length),
    schema: fastifySchemaOf(entry),
    // Typed above by the entry; Fastify's own RouteOptions knows only its default (untyped) request.
    handler: handler as RouteHandlerMethod,
  } as RouteOptions);
}
