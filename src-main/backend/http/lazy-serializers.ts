import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance } from 'fastify';

/**
 * Response serializers compiled on a route's first answer instead of at start: with a response
 * schema on every admin route, compiling them all (fast-json-stringify) made `serve` ~15% slower
 * to come up, for routes most sessions never call. Same compiler and options as Fastify's default.
 */
export function compileSerializersLazily(app: FastifyInstance): void {
  const compile = SerializerSelector()(undefined, {});
  app.setSerializerCompiler((route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data) => (serialize ??= compile({ ...route, httpStatus: route.httpStatus ?? '200' }) as (data: unknown) => string)(data);
  });
}
