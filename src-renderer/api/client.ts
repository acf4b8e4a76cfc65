import { adminClient } from '../../src-shared/contract/admin-client.ts';

export { AdminApiError, collectionOf } from '../../src-shared/contract/admin-client.ts';

/**
 * The admin API, same origin: the console is served by the admin listener, and the HttpOnly
 * session cookie set at sign-in authenticates every call (no token in script reach).
 */
export const admin = adminClient({
  // The console switches to its sign-in page, which says where to get a token or a link.
  unauthorizedMessage: 'You are signed out. Sign in again on the sign-in page.',
  unreachableMessage: () => 'The console cannot reach its server. Is it still running?',
});

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
