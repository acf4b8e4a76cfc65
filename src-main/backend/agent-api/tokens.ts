import type { FastifyRequest } from 'fastify';

function firstString(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/** Session token from query `session_token` (spec) or header `Session-Token` (reference agent). */
export function sessionTokenOf(request: FastifyRequest): string | undefined {
  const query = request.query;
  const fromQuery =
    typeof query === 'object' && query !== null && 'session_token' in query ? firstString(query.session_token) : undefined;
  return fromQuery ?? firstString(request.headers['session-token']);
}

/** User token from query `user_token` (spec) or header `Authorization: user_token <t>`. */
export function userTokenOf(request: FastifyRequest): string | undefined {
  const query = request.query;
  const fromQuery =
    typeof query === 'object' && query !== null && 'user_token' in query ? firstString(query.user_token) : undefined;
  if (fromQuery) return fromQuery;
  const match = /^\s*user_token\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1];
}
