// The admin API writes answers with JSON.stringify; under the test suites each answer is first
// checked against its contract schema, so a route drifting from the contract fails a test.
import Fastify from 'fastify';
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { writeResponsesAsJson } from '../../../src-main/backend/http/response-writer.ts';

const Answer = Type.Object({ id: Type.Integer(), name: Type.Union([Type.String(), Type.Null()]) });

async function appAnswering(body: unknown) {
  const app = Fastify({ logger: false });
  await writeResponsesAsJson(app);
  app.get('/thing', { schema: { response: { 200: Answer } } }, async () => body);
  await app.ready();
  return app;
}

describe('admin answers', () => {
  it('are written as JSON.stringify writes them, undeclared fields included, as before the contract', async () => {
    const app = await appAnswering({ id: 1, name: null, extra: 'kept' });
    const response = await app.inject({ method: 'GET', url: '/thing' });
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('{"id":1,"name":null,"extra":"kept"}');
    await app.close();
  });

  it('outside their schema fail under the test suites (MDM_CHECK_RESPONSES=1)', async () => {
    expect(process.env.MDM_CHECK_RESPONSES).toBe('1');
    const app = await appAnswering({ id: 'one', name: 5 });
    const response = await app.inject({ method: 'GET', url: '/thing' });
    expect(response.statusCode).toBe(500);
    expect(response.body).toMatch(/outside its response schema/);
    await app.close();
  });
});
