// Registers an admin endpoint from its entry in the contract's table (src-shared/contract/admin-routes.ts):
// method, path and schemas come from the entry, the handler's request and reply are typed by them.
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
  scope.route({
    ...extras,
    method: entry.method,
    url: entry.path.slice(scope.prefix.length),
    schema: fastifySchemaOf(entry),
    // Typed above by the entry; Fastify's own RouteOptions knows only its default (untyped) request.
    handler: handler as RouteHandlerMethod,
  } as RouteOptions);
}
