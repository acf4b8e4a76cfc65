import type { FastifyRequest } from 'fastify';

function firstString(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/** Session token from query `session_token` (spec) or header `Session-Token` (reference agent). */
export function sessionTokenOf(request: FastifyRequest): string | undefined {
  const query = request.query as Record<string, unknown> | undefined;
  return firstString(query?.session_token) ?? firstString(request.headers['session-token']);
}

/** User token from query `user_token` (spec) or header `Authorization: user_token <t>`. */
export function userTokenOf(request: FastifyRequest): string | undefined {
  const query = request.query as Record<string, unknown> | undefined;
  const fromQuery = firstString(query?.user_token);
  if (fromQuery) return fromQuery;
  const match = /^\s*user_token\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1];
}
