import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.ts';

/**
 * Schema validation lets through numbers SQLite cannot take: `1e309` coerces to Infinity, which an
 * Integer schema accepts (Infinity % 1 is NaN, not non-zero), and `1e20` is an "integer" beyond
 * what a 64-bit column or a LIMIT holds exactly. Such a value in the query, path or JSON body is a
 * 400 before any handler runs.
 */
export function refuseUnusableNumbers(app: FastifyInstance, error: () => ApiError): void {
  app.addHook('preHandler', async (request) => {
    for (const part of [request.params, request.query, request.body]) {
      if (hasUnusableNumber(part, 0)) throw error();
    }
  });
}

function hasUnusableNumber(value: unknown, depth: number): boolean {
  if (typeof value === 'number') return !Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value));
  if (value === null || typeof value !== 'object' || depth > 32) return false;
  if (Array.isArray(value)) return value.some((item) => hasUnusableNumber(item, depth + 1));
  // Parsed JSON and query objects (fast-querystring's have a prototype of their own); an upload's
  // stream or a Buffer is not looked into.
  if (Buffer.isBuffer(value) || typeof (value as { pipe?: unknown }).pipe === 'function') return false;
  for (const key in value) if (hasUnusableNumber((value as Record<string, unknown>)[key], depth + 1)) return true;
  return false;
}
