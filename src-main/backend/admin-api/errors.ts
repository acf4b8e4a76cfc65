import type { FastifyError, FastifyInstance } from 'fastify';
import { DISK_FULL_CODE, DISK_FULL_MESSAGE, isDiskFull } from '../db/disk-full.ts';
import { ApiError } from '../errors.ts';

/** Admin-API error bodies: `{ error: CODE, message }`; bad input is a 4xx, never a 500. */
export function installAdminErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) return reply.code(error.status).send({ error: error.code, message: error.message });
    if ((error as FastifyError).validation) {
      return reply.code(400).send({ error: 'ERROR_BAD_REQUEST', message: `Invalid ${error.message}` });
    }
    if (isDiskFull(error)) return reply.code(507).send({ error: DISK_FULL_CODE, message: DISK_FULL_MESSAGE });
    const status = (error as FastifyError).statusCode ?? 500;
    if (status >= 400 && status < 500) return reply.code(status).send({ error: 'ERROR_BAD_REQUEST', message: error.message });
    request.log.error(error);
    return reply.code(500).send({ error: 'ERROR', message: 'Internal error' });
  });
}
