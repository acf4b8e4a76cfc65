import type { FastifyInstance } from 'fastify';
import type { TSchema } from 'typebox';

/**
 * How the admin API writes its answers. The contract's response schemas type every handler (a
 * route returning another shape does not compile), but the bytes are written by JSON.stringify,
 * as before the contract: fast-json-stringify, Fastify's default, was ~9x slower on the device
 * list (10,000 agents: 109 ms vs 12 ms, its `anyOf` for every nullable column) and compiled a
 * serializer per route at start. The test suites set MDM_CHECK_RESPONSES=1: each answer is then
 * checked against its schema, so drift between a route and the contract fails a test.
 */
export async function writeResponsesAsJson(app: FastifyInstance): Promise<void> {
  if (process.env.MDM_CHECK_RESPONSES !== '1') {
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
    return;
  }
  // Loaded only to check: TypeBox's value module is not needed to serve (cold start).
  const { Check, Errors } = await import('typebox/value');
  app.setSerializerCompiler(({ schema, method, url, httpStatus }) => {
    return (data) => {
      if (!Check(schema as TSchema, data)) {
        const [first] = Errors(schema as TSchema, data);
        throw new Error(
          `${method} ${url} (${httpStatus}) answered outside its response schema: ${JSON.stringify(first)?.slice(0, 300)}`,
        );
      }
      return JSON.stringify(data);
    };
  });
}
