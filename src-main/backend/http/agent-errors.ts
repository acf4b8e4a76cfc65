import type { FastifyError, FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { DISK_FULL_CODE, DISK_FULL_MESSAGE, isDiskFull } from '../db/disk-full.ts';
import { ApiError } from '../errors.ts';

/**
 * Agent-API error bodies: `[code, message]` (GLPI style). Bad input of any kind ends as a 4xx
 * with such a body; only a bug ends as a 500, and then without internals.
 */
export function installAgentErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) {
      const retryAfter = (error as ApiError & { retryAfterSeconds?: number }).retryAfterSeconds;
      if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
      return reply.code(error.status).send([error.code, error.message]);
    }
    if ((error as FastifyError).validation) {
      return reply.code(400).send(['ERROR_BAD_REQUEST', 'Bad Request']);
    }
    if (isDiskFull(error)) return reply.code(507).send([DISK_FULL_CODE, DISK_FULL_MESSAGE]);
    const status = (error as FastifyError).statusCode ?? 500;
    if (status === 413) return reply.code(413).send(['ERROR_BAD_REQUEST', 'Request body is too large']);
    if (status >= 400 && status < 500) return reply.code(status).send(['ERROR_BAD_REQUEST', `Bad Request: ${error.message}`]);
    request.log.error(error);
    return reply.code(500).send(['ERROR', 'Internal error']);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(['ERROR_RESOURCE_NOT_FOUND', `No endpoint ${request.method} ${request.url.split('?')[0]}`]),
  );
}

/**
 * Devices may omit Content-Type or send `application/json` with no body at all
 * (changeActiveProfile): any body is read as JSON when present, nothing when empty.
 */
export function installLenientJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, jsonBodyParser('Bad Request: the body is not valid JSON'));
}

/** A Fastify body parser: JSON (prototype-safe) when there is a body, nothing when it is empty. */
export function jsonBodyParser(invalidMessage: string) {
  return (_request: unknown, body: string | Buffer, done: (error: Error | null, value?: unknown) => void): void => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, parseJsonSafely(text));
    } catch {
      done(new ApiError(400, 'ERROR_BAD_REQUEST', invalidMessage), undefined);
    }
  };
}

/** JSON.parse that refuses `__proto__` and `constructor.prototype` keys, as Fastify's own parser does. */
export function parseJsonSafely(text: string): unknown {
  return secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
}
